/// The `reason` of an APNs error answer (Apple's table of status codes and reasons).
///
/// A reason Apple adds later decodes as `.unknown` with its text kept, and is then classified
/// by its HTTP status: it never crashes decoding and is never dropped from logs or events.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseID, badDeviceToken, badExpirationDate, badMessageID, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden
    case invalidProviderToken, missingProviderToken, unrelatedKeyIDInToken
    case badEnvironmentKeyInToken, badEnvironmentKeyIDInToken
    case badPath, methodNotAllowed, expiredToken, unregistered, payloadTooLarge
    case tooManyProviderTokenUpdates, tooManyRequests, internalServerError, serviceUnavailable, shutdown
    case unknown(String)

    private static let known: [String: APNsReason] = [
        "BadCollapseId": .badCollapseID, "BadDeviceToken": .badDeviceToken, "BadExpirationDate": .badExpirationDate,
        "BadMessageId": .badMessageID, "BadPriority": .badPriority, "BadTopic": .badTopic,
        "DeviceTokenNotForTopic": .deviceTokenNotForTopic, "DuplicateHeaders": .duplicateHeaders, "IdleTimeout": .idleTimeout,
        "InvalidPushType": .invalidPushType, "MissingDeviceToken": .missingDeviceToken, "MissingTopic": .missingTopic,
        "PayloadEmpty": .payloadEmpty, "TopicDisallowed": .topicDisallowed, "BadCertificate": .badCertificate,
        "BadCertificateEnvironment": .badCertificateEnvironment, "ExpiredProviderToken": .expiredProviderToken,
        "Forbidden": .forbidden, "InvalidProviderToken": .invalidProviderToken, "MissingProviderToken": .missingProviderToken,
        "UnrelatedKeyIdInToken": .unrelatedKeyIDInToken, "BadEnvironmentKeyInToken": .badEnvironmentKeyInToken,
        "BadEnvironmentKeyIdInToken": .badEnvironmentKeyIDInToken, "BadPath": .badPath, "MethodNotAllowed": .methodNotAllowed,
        "ExpiredToken": .expiredToken, "Unregistered": .unregistered, "PayloadTooLarge": .payloadTooLarge,
        "TooManyProviderTokenUpdates": .tooManyProviderTokenUpdates, "TooManyRequests": .tooManyRequests,
        "InternalServerError": .internalServerError, "ServiceUnavailable": .serviceUnavailable, "Shutdown": .shutdown,
    ]
    private static let names: [APNsReason: String] = Dictionary(uniqueKeysWithValues: known.map { ($1, $0) })

    public init(_ text: String) {
        self = Self.known[text] ?? .unknown(text)
    }

    /// Apple's spelling, or the unknown text verbatim.
    public var description: String {
        if case .unknown(let text) = self { return text }
        return Self.names[self] ?? ""
    }
}
