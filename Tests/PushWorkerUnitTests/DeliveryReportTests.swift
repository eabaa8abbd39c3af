import Foundation
import PushModel
@testable import PushWorker
import Testing

@Suite("Delivery report")
struct DeliveryReportTests {
    @Test("delivered devices are only counted; the others are kept, without their keys, for the planner")
    func compact() {
        let keyed = Device(
            id: 9, recipientID: "user-1", platform: .android, appID: "example", environment: .production, token: "t-9",
            publicKey: "MIIBIjANBgkq", keyID: "k", keyRegisteredAt: nil, tokenRegisteredAt: Fixtures.now, appVersion: nil)
        var report = DeliveryReport()
        for id in 1...1000 { report.add(DeviceResult(device: Fixtures.device(Int64(id)), outcome: .sent(.delivered(id: nil)))) }
        report.add(DeviceResult(device: keyed, outcome: .sent(.retryLater(reason: "UNAVAILABLE", retryAfter: nil))))
        #expect(report.results.count == 1)
        #expect(report.results.first?.device.publicKey == nil)
        #expect(report.results.first?.device.id == 9)
        #expect(report.delivered == [.ios: 1000])
        #expect(report.deviceCount == 1001)

        let metrics = WorkerMetrics()
        metrics.record(report, followUps: [])
        #expect(metrics.deliveries.value("ios", "delivered") == 1000)
        #expect(metrics.deliveries.value("android", "retry") == 1)
    }
}
