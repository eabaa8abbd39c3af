/// An FCM HTTP v1 error: the `errorCode` of the `google.firebase.fcm.v1.FcmError` detail, or
/// failing that the canonical `error.status`.
///
/// A code Google adds later decodes as `.unknown` with its text kept, and is then classified
/// by its HTTP status.
public enum FCMErrorCode: Sendable, Hashable, CustomStringConvertible {
    case unspecifiedError, invalidArgument, unregistered, senderIDMismatch, quotaExceeded
    case unavailable, internalError, thirdPartyAuthError
    /// Canonical statuses that arrive without an FCM detail.
    case permissionDenied, unauthenticated
    case unknown(String)

    private static let known: [String: FCMErrorCode] = [
        "UNSPECIFIED_ERROR": .unspecifiedError, "INVALID_ARGUMENT": .invalidArgument, "UNREGISTERED": .unregistered,
        "SENDER_ID_MISMATCH": .senderIDMismatch, "QUOTA_EXCEEDED": .quotaExceeded, "UNAVAILABLE": .unavailable,
        "INTERNAL": .internalError, "THIRD_PARTY_AUTH_ERROR": .thirdPartyAuthError,
        "PERMISSION_DENIED": .permissionDenied, "UNAUTHENTICATED": .unauthenticated,
    ]
    private static let names: [FCMErrorCode: String] = Dictionary(uniqueKeysWithValues: known.map { ($1, $0) })

    public init(_ text: String) {
        self = Self.known[text] ?? .unknown(text)
    }

    /// Google's spelling, or the unknown text verbatim.
    public var description: String {
        if case .unknown(let text) = self { return text }
        return Self.names[self] ?? ""
    }
}
