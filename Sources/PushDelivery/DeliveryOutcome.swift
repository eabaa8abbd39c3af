import Foundation

/// What became of one push, in the terms the worker acts on.
public enum DeliveryOutcome: Sendable, Equatable {
    /// Accepted by APNs/FCM (`id`: the apns-id or FCM message name).
    case delivered(id: String?)
    /// The token is dead: prune the device. `invalidSince` is APNs's 410 timestamp, before
    /// which a registration counts as stale (a token re-registered after it is kept).
    case invalidToken(reason: String, invalidSince: Date?)
    /// Try again later, not before `retryAfter` when the service said so.
    case retryLater(reason: String, retryAfter: Duration?)
    /// The request itself is wrong (payload too large, bad topic, …): retrying the same
    /// request cannot succeed. Logged and counted, not retried, token kept.
    case rejected(reason: String, status: Int)
    /// Credentials or configuration are broken (bad key, wrong topic for the key): alert an
    /// operator; do not retry, do not prune.
    case configurationError(reason: String, status: Int)

    /// A stable label for metrics and logs.
    public var label: String {
        switch self {
        case .delivered: "delivered"
        case .invalidToken: "invalid_token"
        case .retryLater: "retry"
        case .rejected: "rejected"
        case .configurationError: "configuration_error"
        }
    }

    /// The service's reason string (empty when delivered).
    public var reason: String {
        switch self {
        case .delivered: ""
        case .invalidToken(let reason, _), .retryLater(let reason, _): reason
        case .rejected(let reason, _), .configurationError(let reason, _): reason
        }
    }
}

/// `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
enum RetryAfter {
    static func parse(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .seconds(max(0, Int(date.timeIntervalSince(now).rounded(.up))))
    }
}

/// A short error-body excerpt for reasons we do not recognise, kept rather than dropped.
func bodyExcerpt(_ body: [UInt8]) -> String {
    String(decoding: body.prefix(200), as: UTF8.self)
}
