/// A payload that cannot be sent as built. The worker reports it as a permanent outcome
/// for that device: a push is never silently truncated.
public enum PayloadError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit):
            return "payload too large: \(bytes) bytes, the limit is \(limit) (shorten the content or the fallback text)"
        }
    }
}

/// The services' size limits.
public enum PayloadLimits {
    /// APNs: the whole JSON payload, for every push type but VoIP.
    public static let apns = 4096
    /// FCM: the sum of the UTF-8 bytes of every data key and value.
    public static let fcmData = 4096
}
