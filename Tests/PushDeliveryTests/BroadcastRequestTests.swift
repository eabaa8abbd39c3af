import Foundation
@testable import PushDelivery
import Testing

@Suite("APNs Live Activity requests")
struct BroadcastRequestTests {
    @Test("a broadcast names its channel, never a topic, and carries apns-request-id")
    func headers() {
        let id = UUID()
        let broadcast = APNsBroadcast(
            bundleID: "com.example.app", channelID: "dHN0LXNyY2gtY2hubA==", environment: .production, priority: .immediate,
            expiration: 0, requestID: id, payload: Array("{}".utf8))
        let headers = Dictionary(broadcast.headers(authorization: "bearer jwt").map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
        #expect(broadcast.path == "/4/broadcasts/apps/com.example.app")
        #expect(headers["apns-push-type"] == "liveactivity" && headers["apns-channel-id"] == "dHN0LXNyY2gtY2hubA==")
        #expect(headers["apns-priority"] == "10" && headers["apns-expiration"] == "0")
        #expect(headers["apns-request-id"] == id.uuidString.lowercased())
        #expect(headers["apns-topic"] == nil && headers["apns-id"] == nil)
    }

    @Test("5120 bytes for a broadcast, 4096 for a device's Live Activity push; the topic is suffixed")
    func limits() {
        let big = [UInt8](repeating: 0x20, count: 5000)
        #expect(APNsBroadcast(bundleID: "b", channelID: "AAAA", environment: .sandbox, payload: big).localProblem == nil)
        #expect(APNsBroadcast(bundleID: "b", channelID: "AAAA", environment: .sandbox, payload: big + big).localProblem
            == .rejected(reason: "PayloadTooLarge", status: 413))
        let push = APNsNotification(
            deviceToken: "abcd", bundleID: "com.example.app", environment: .production, pushType: .liveactivity,
            priority: .conservesPower, payload: big)
        #expect(push.topic == "com.example.app.push-type.liveactivity")
        #expect(push.localProblem == .rejected(reason: "PayloadTooLarge", status: 413))
    }

    @Test("broadcast answers: 200 by apns-request-id; a deleted channel is configuration, not retried; 5xx retried")
    func classification() {
        func answer(_ status: Int, _ body: String = "", _ headers: [String: String] = [:]) -> DeliveryOutcome {
            APNsClient.classifyBroadcast(HTTPResponse(status: status, headers: headers, body: Array(body.utf8), httpVersion: 2))
        }
        #expect(answer(200, "", ["apns-request-id": "r-1"]) == .delivered(id: "r-1"))
        #expect(answer(400, #"{"reason":"ChannelNotRegistered"}"#) == .configurationError(reason: "ChannelNotRegistered", status: 400))
        #expect(answer(400, #"{"reason":"BadExpirationDate"}"#) == .rejected(reason: "BadExpirationDate", status: 400))
        #expect(answer(503, #"{"reason":"ServiceUnavailable"}"#) == .retryLater(reason: "ServiceUnavailable", retryAfter: nil))
    }
}
