import Foundation
@testable import PushWorker
import PushStore
import Testing

/// The events the worker publishes carry every field their schema in `Schemas/events`
/// requires: those schemas are the contract for consumers in other languages.
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

    @Test("token.invalid has every required field, with the APNs timestamp when given")
    func tokenInvalid() throws {
        let event = WorkerEvent.tokenInvalid(device: Self.device, reason: "Unregistered", invalidSince: Date(timeIntervalSince1970: 1_700_000_000), jobID: "j")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.body)) as? [String: Any])
        for field in try required("token.invalid.v1.schema.json") { #expect(object[field] != nil, "missing \(field)") }
        #expect(object["event_id"] as? String == event.eventID)
        #expect((object["invalid_since"] as? String)?.hasPrefix("2023-11-14T22:13:20") == true)
        #expect(event.routingKey == "token.invalid")
    }

    @Test("key.invalid has every required field")
    func keyInvalid() throws {
        let event = WorkerEvent.keyInvalid(device: Self.device, reason: "public key is RSA-1024", jobID: "j")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.body)) as? [String: Any])
        for field in try required("key.invalid.v1.schema.json") { #expect(object[field] != nil, "missing \(field)") }
    }
}
