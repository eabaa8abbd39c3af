import Foundation

/// `token.invalid` (`Schemas/events/token.invalid.v1.schema.json`): APNs or FCM declared a
/// token dead. Workers publish it; the cleanup consumer decodes it and prunes the device.
/// One type for both sides, so the two cannot drift apart.
///
/// The event carries the whole token (it stays inside the cluster); logs never do.
public struct TokenInvalidEvent: PushEvent, Hashable {
    public static let name = "token.invalid"

    public var eventID: String
    public var occurredAt: Date
    public var platform: Platform
    public var appID: String
    /// nil only in events from other producers that omit it (read as `production` for Android).
    public var environment: PushEnvironment?
    /// `devices.id` at send time; informational (pruning matches on the token).
    public var deviceID: Int64?
    public var token: String
    /// The provider's reason, verbatim (`Unregistered`, `UNREGISTERED`, …).
    public var reason: String
    /// APNs's 410 timestamp: a token re-registered after it is kept.
    public var invalidSince: Date?
    public var jobID: String?
    /// nil: the device's token (`token_kind` absent or `device`); else a Live Activity token,
    /// pruned without touching the device.
    public var tokenKind: LiveActivity.TokenKind?
    /// The activity whose update token it is (`activity_update` only; informational).
    public var activityID: String?

    public init(
        eventID: String = UUID().uuidString.lowercased(), occurredAt: Date, platform: Platform, appID: String,
        environment: PushEnvironment?, deviceID: Int64?, token: String, reason: String, invalidSince: Date?, jobID: String?,
        tokenKind: LiveActivity.TokenKind? = nil, activityID: String? = nil
    ) {
        self.eventID = eventID
        self.occurredAt = occurredAt
        self.platform = platform
        self.appID = appID
        self.environment = environment
        self.deviceID = deviceID
        self.token = token
        self.reason = reason
        self.invalidSince = invalidSince
        self.jobID = jobID
        self.tokenKind = tokenKind
        self.activityID = tokenKind == .activityUpdate ? activityID : nil
    }

    /// The event for a device whose token the provider refused.
    public init(device: Device, reason: String, invalidSince: Date?, jobID: String, occurredAt: Date) {
        self.init(
            occurredAt: occurredAt, platform: device.platform, appID: device.appID, environment: device.environment,
            deviceID: device.id, token: device.token, reason: reason, invalidSince: invalidSince, jobID: jobID)
    }

    enum CodingKeys: String, EventCodingKeys {
        case version, event
        case eventID = "event_id", occurredAt = "occurred_at", platform, appID = "app_id", environment
        case deviceID = "device_id", token, reason, invalidSince = "invalid_since", jobID = "job_id"
        case tokenKind = "token_kind", activityID = "activity_id"
    }

    /// Refuses another event type, an empty token or an empty app id: nothing to prune.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try EventCoding.expect(Self.name, in: container, key: .event)
        eventID = try container.decodeIfPresent(String.self, forKey: .eventID) ?? ""
        occurredAt = try EventCoding.decodeDateIfPresent(container, .occurredAt) ?? Date(timeIntervalSince1970: 0)
        platform = try container.decode(Platform.self, forKey: .platform)
        appID = try EventCoding.decodeNonEmpty(container, .appID)
        // An unknown environment is read as absent, as the cleanup consumer always did.
        environment = (try? container.decodeIfPresent(String.self, forKey: .environment)).flatMap { $0 }.flatMap(PushEnvironment.init(rawValue:))
        deviceID = try? container.decodeIfPresent(Int64.self, forKey: .deviceID)
        token = try EventCoding.decodeNonEmpty(container, .token)
        reason = try container.decodeIfPresent(String.self, forKey: .reason) ?? ""
        invalidSince = try EventCoding.decodeDateIfPresent(container, .invalidSince)
        jobID = try container.decodeIfPresent(String.self, forKey: .jobID)
        let kind = try container.decodeIfPresent(String.self, forKey: .tokenKind) ?? "device"
        if kind == "device" {
            tokenKind = nil
        } else if let liveActivityKind = LiveActivity.TokenKind(rawValue: kind) {
            guard platform == .ios else {
                throw DecodingError.dataCorruptedError(forKey: .tokenKind, in: container, debugDescription: "Live Activity tokens are iOS only")
            }
            tokenKind = liveActivityKind
        } else {
            throw DecodingError.dataCorruptedError(forKey: .tokenKind, in: container, debugDescription: "unknown token_kind \(kind)")
        }
        activityID = try container.decodeIfPresent(String.self, forKey: .activityID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try EventCoding.encodeCommon(
            Self.name, eventID: eventID, occurredAt: occurredAt, platform: platform, appID: appID, into: &container)
        try container.encodeIfPresent(environment, forKey: .environment)
        try container.encodeIfPresent(deviceID, forKey: .deviceID)
        try container.encode(token, forKey: .token)
        try container.encode(reason, forKey: .reason)
        try container.encodeIfPresent(invalidSince.map(RFC3339.string(from:)), forKey: .invalidSince)
        try container.encodeIfPresent(jobID, forKey: .jobID)
        try container.encodeIfPresent(tokenKind?.rawValue, forKey: .tokenKind)
        try container.encodeIfPresent(activityID, forKey: .activityID)
    }
}
