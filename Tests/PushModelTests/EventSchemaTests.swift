import Foundation
import PushModel
import Testing

/// The events workers publish carry every field their schema in `Schemas/events` requires
/// (the contract for consumers in other languages), and the cleanup consumer reads back
/// what the worker writes: both sides use the same types.
@Suite("Event contracts")
struct EventSchemaTests {
    static let events = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Schemas/events")

    static let device = Device(
        id: 7, recipientID: "r", platform: .ios, appID: "com.example.app", environment: .sandbox, token: "ab",
        publicKey: "k", keyID: "0123456789abcdef", keyRegisteredAt: nil, tokenRegisteredAt: Date(), appVersion: nil)

    func required(_ schema: String) throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.events.appendingPathComponent(schema))) as? [String: Any]
        return try #require(object?["required"] as? [String])
    }

    @Test("token.invalid has every required field, with the APNs timestamp when given, and decodes back")
    func tokenInvalid() throws {
        let event = TokenInvalidEvent(
            device: Self.device, reason: "Unregistered", invalidSince: Date(timeIntervalSince1970: 1_700_000_000), jobID: "j",
            occurredAt: Date(timeIntervalSince1970: 1_800_000_000))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.json)) as? [String: Any])
        for field in try required("token.invalid.v1.schema.json") { #expect(object[field] != nil, "missing \(field)") }
        #expect(object["event_id"] as? String == event.eventID)
        #expect(object["event"] as? String == "token.invalid")
        #expect(object["version"] as? Int == 1)
        #expect((object["invalid_since"] as? String)?.hasPrefix("2023-11-14T22:13:20") == true)
        let decoded = try JSONDecoder().decode(TokenInvalidEvent.self, from: Data(event.json))
        #expect(decoded == event)
    }

    @Test("key.invalid has every required field, key_id null when absent, and decodes back")
    func keyInvalid() throws {
        let event = KeyInvalidEvent(
            device: Self.device, reason: "public key is RSA-1024", jobID: "j", occurredAt: Date(timeIntervalSince1970: 1_800_000_000))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.json)) as? [String: Any])
        for field in try required("key.invalid.v1.schema.json") { #expect(object[field] != nil, "missing \(field)") }
        #expect(try JSONDecoder().decode(KeyInvalidEvent.self, from: Data(event.json)) == event)
        var keyless = event
        keyless.keyID = nil
        let keylessObject = try #require(try JSONSerialization.jsonObject(with: Data(keyless.json)) as? [String: Any])
        #expect(keylessObject["key_id"] is NSNull)
    }

    @Test("the cleanup side refuses another event, an empty token, or a bad timestamp; tolerates a missing environment")
    func decodingRules() throws {
        func decode(_ text: String) -> TokenInvalidEvent? { try? JSONDecoder().decode(TokenInvalidEvent.self, from: Data(text.utf8)) }
        #expect(decode(#"{"event":"key.invalid","platform":"ios","app_id":"a","token":"t"}"#) == nil)
        #expect(decode(#"{"event":"token.invalid","platform":"ios","app_id":"a","token":""}"#) == nil)
        #expect(decode(#"{"event":"token.invalid","platform":"windows","app_id":"a","token":"t"}"#) == nil)
        #expect(decode(#"{"event":"token.invalid","platform":"ios","app_id":"a","token":"t","invalid_since":"yesterday"}"#) == nil)
        let minimal = try #require(decode(#"{"event":"token.invalid","platform":"android","app_id":"a","token":"t"}"#))
        #expect(minimal.environment == nil)
        #expect(minimal.invalidSince == nil)
        #expect(minimal.token == "t")
    }

    @Test("job.completed has every required field, every platform and outcome counted (zeros too), and decodes back")
    func jobCompleted() throws {
        let event = JobCompletedEvent(
            jobID: "campaign-1", occurredAt: Date(timeIntervalSince1970: 1_800_000_000), chunks: 3,
            counts: [.ios: [.delivered: 5, .invalid: 1], .android: [.retriesExhausted: 2]], failedDeviceIDs: [4, 9, 12],
            failedDeviceIDsTruncated: false)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.json)) as? [String: Any])
        for field in try required("job.completed.v1.schema.json") { #expect(object[field] != nil, "missing \(field)") }
        #expect(object["event_id"] as? String == "campaign-1")
        #expect(object["devices"] as? Int == 8)
        let counts = try #require(object["counts"] as? [String: [String: Int]])
        #expect(counts["android"] == ["delivered": 0, "invalid": 0, "rejected": 0, "retries_exhausted": 2])
        #expect(try JSONDecoder().decode(JobCompletedEvent.self, from: Data(event.json)) == event)
    }
}
