import Foundation
import PushModel
import PushRuntime
import PushStore

/// Events the worker publishes on the events exchange (`Schemas/events/`).
enum WorkerEvent {
    /// `token.invalid`: APNs or FCM declared a token dead; the cleanup consumer prunes it.
    /// The event carries the whole token (it stays inside the cluster); logs never do.
    struct Message: Sendable {
        let routingKey: String
        let eventID: String
        let body: [UInt8]
    }

    static func tokenInvalid(device: Device, reason: String, invalidSince: Date?, jobID: String) -> Message {
        let eventID = UUID().uuidString.lowercased()
        var fields: [String: JSONValue] = [
            "version": .number(1),
            "event": .string("token.invalid"),
            "event_id": .string(eventID),
            "occurred_at": .string(RFC3339.string(from: Date())),
            "platform": .string(device.platform.rawValue),
            "app_id": .string(device.appID),
            "environment": .string(device.environment.rawValue),
            "device_id": .number(Double(device.id)),
            "token": .string(device.token),
            "reason": .string(reason),
            "job_id": .string(jobID),
        ]
        if let invalidSince { fields["invalid_since"] = .string(RFC3339.string(from: invalidSince)) }
        return Message(routingKey: "token.invalid", eventID: eventID, body: Array(JSONValue.object(fields).jsonText.utf8))
    }

    /// `key.invalid`: a device's registered public key cannot be used (not RSA, too small,
    /// unparseable). The device is skipped; the event lets its owner ask it to re-register.
    static func keyInvalid(device: Device, reason: String, jobID: String) -> Message {
        let eventID = UUID().uuidString.lowercased()
        let fields: [String: JSONValue] = [
            "version": .number(1),
            "event": .string("key.invalid"),
            "event_id": .string(eventID),
            "occurred_at": .string(RFC3339.string(from: Date())),
            "platform": .string(device.platform.rawValue),
            "app_id": .string(device.appID),
            "device_id": .number(Double(device.id)),
            "key_id": device.keyID.map(JSONValue.string) ?? .null,
            "reason": .string(reason),
            "job_id": .string(jobID),
        ]
        return Message(routingKey: "key.invalid", eventID: eventID, body: Array(JSONValue.object(fields).jsonText.utf8))
    }
}
