@testable import PushDelivery
import Testing

@Suite("APNs device token check")
struct DeviceTokenCheckTests {
    @Test("exactly 0-9, A-F and a-f are hex digits, among all 256 byte values")
    func hexDigits() {
        let expected = Set(Array("0123456789abcdefABCDEF".utf8))
        for value in 0...255 {
            let byte = UInt8(value)
            #expect(byte.isHexDigit == expected.contains(byte), "byte \(value)")
        }
    }

    @Test("a token that is not an even number of hex digits is refused before it is sent")
    func refusedLocally() {
        func problem(_ token: String) -> DeliveryOutcome? {
            APNsNotification(deviceToken: token, bundleID: "com.example.app", environment: .production, payload: Array("{}".utf8))
                .localProblem
        }
        let refused = DeliveryOutcome.invalidToken(reason: "BadDeviceToken", invalidSince: nil)
        #expect(problem(String(repeating: "aF09", count: 16)) == nil)
        #expect(problem(String(repeating: "aF09", count: 15) + "aF0g") == refused)
        #expect(problem(String(repeating: "aF09", count: 15) + "aF0:") == refused)
        #expect(problem(String(repeating: "aF09", count: 15) + "aF0") == refused)
        #expect(problem("") == refused)
    }
}
