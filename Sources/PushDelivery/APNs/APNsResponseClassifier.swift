import Foundation

/// Maps an APNs answer to what the worker does about it (the table in
/// shared/PROTOCOLS.md). Unknown reasons are kept verbatim and classified by status.
enum APNsResponseClassifier {
    /// The response headers `classify` reads: the only ones a push's request keeps.
    static let headerNames = ["apns-id", "retry-after"]

    static func classify(_ response: HTTPResponse, now: Date = Date()) -> DeliveryOutcome {
        if response.status == 200 {
            return .delivered(id: response.headers["apns-id"])
        }
        let body = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        let reason = APNsReason(body?["reason"] as? String ?? "HTTP \(response.status): \(bodyExcerpt(response.body))")
        let text = reason.description
        let retryAfter = RetryAfter.parse(response.headers["retry-after"], now: now)
        switch (response.status, reason) {
        case (400, .badDeviceToken), (410, .expiredToken):
            return .invalidToken(reason: text, invalidSince: nil)
        case (410, _):
            let milliseconds = (body?["timestamp"] as? NSNumber)?.doubleValue
            return .invalidToken(reason: text, invalidSince: milliseconds.map { Date(timeIntervalSince1970: $0 / 1000) })
        case (400, .deviceTokenNotForTopic):
            // Usually a wrong topic or environment for the key, not a dead token.
            return .configurationError(reason: text, status: 400)
        case (400, .idleTimeout), (403, .unrelatedKeyIDInToken), (429, .tooManyProviderTokenUpdates):
            return .retryLater(reason: text, retryAfter: retryAfter)
        case (403, _):
            // InvalidProviderToken, MissingProviderToken, BadCertificate, ExpiredProviderToken, …
            return .configurationError(reason: text, status: 403)
        case (429, _):
            return .retryLater(reason: text, retryAfter: retryAfter)
        case (let status, _) where status >= 500:
            return .retryLater(reason: text, retryAfter: retryAfter)
        default:
            return .rejected(reason: text, status: response.status)
        }
    }
}
