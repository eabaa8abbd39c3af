import Foundation

/// `key.invalid` (`Schemas/events/key.invalid.v1.schema.json`): a device's registered
/// public key cannot be used (not RSA, too small, unparseable). The device was skipped;
/// the event lets its owner ask it to re-register.
public struct KeyInvalidEvent: PushEvent, Hashable {
    public static let name = "key.invalid"

    public var eventID: String
    public var occurredAt: Date
    public var platform: Platform
    public var appID: String
    public var deviceID: Int64
    /// The refused key's id (`devices.key_id`); written as `null` when absent.
    public var keyID: String?
    /// The crypto module's error, e.g. "public key is RSA-1024: …".
    public var reason: String
    public var jobID: String

    public init(
        eventID: String = UUID().uuidString.lowercased(), occurredAt: Date, platform: Platform, appID: String,
        deviceID: Int64, keyID: String?, reason: String, jobID: String
    ) {
        self.eventID = eventID
        self.occurredAt = occurredAt
        self.platform = platform
        self.appID = appID
        self.deviceID = deviceID
        self.keyID = keyID
        self.reason = reason
        self.jobID = jobID
    }

    /// The event for a device skipped for its key.
    public init(device: Device, reason: String, jobID: String, occurredAt: Date) {
        self.init(
            occurredAt: occurredAt, platform: device.platform, appID: device.appID, deviceID: device.id,
            keyID: device.keyID, reason: reason, jobID: jobID)
    }

    enum CodingKeys: String, EventCodingKeys {
        case version, event
        case eventID = "event_id", occurredAt = "occurred_at", platform, appID = "app_id"
        case deviceID = "device_id", keyID = "key_id", reason, jobID = "job_id"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try EventCoding.expect(Self.name, in: container, key: .event)
        eventID = try container.decode(String.self, forKey: .eventID)
        occurredAt = try EventCoding.decodeDateIfPresent(container, .occurredAt) ?? Date(timeIntervalSince1970: 0)
        platform = try container.decode(Platform.self, forKey: .platform)
        appID = try EventCoding.decodeNonEmpty(container, .appID)
        deviceID = try container.decode(Int64.self, forKey: .deviceID)
        keyID = try container.decodeIfPresent(String.self, forKey: .keyID)
        reason = try container.decode(String.self, forKey: .reason)
        jobID = try container.decode(String.self, forKey: .jobID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try EventCoding.encodeCommon(
            Self.name, eventID: eventID, occurredAt: occurredAt, platform: platform, appID: appID, into: &container)
        try container.encode(deviceID, forKey: .deviceID)
        try container.encode(keyID, forKey: .keyID)
        try container.encode(reason, forKey: .reason)
        try container.encode(jobID, forKey: .jobID)
    }
}
