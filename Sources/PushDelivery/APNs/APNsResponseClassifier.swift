import Foundation

/// Maps an APNs answer to what the worker does about it (the table in
/// shared/PROTOCOLS.md). Unknown reasons are kept verbatim and classified by status.
enum APNsResponseClassifier {
    static func classify(_ response: HTTPResponse, now: Date = Date()) -> DeliveryOutcome {
        if response.status == 200 {
            return .delivered(id: response.headers["apns-id"])
        }
        let body = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        let reason = body?["reason"] as? String ?? "HTTP \(response.status): \(bodyExcerpt(response.body))"
        let retryAfter = RetryAfter.parse(response.headers["retry-after"], now: now)
        switch (response.status, reason) {
        case (400, "BadDeviceToken"), (410, "ExpiredToken"):
            return .invalidToken(reason: reason, invalidSince: nil)
        case (410, "Unregistered"), (410, _):
            let milliseconds = (body?["timestamp"] as? NSNumber)?.doubleValue
            return .invalidToken(reason: reason, invalidSince: milliseconds.map { Date(timeIntervalSince1970: $0 / 1000) })
        case (400, "DeviceTokenNotForTopic"):
            // Usually a wrong topic or environment for the key, not a dead token.
            return .configurationError(reason: reason, status: 400)
        case (400, "IdleTimeout"), (403, "UnrelatedKeyIdInToken"), (429, "TooManyProviderTokenUpdates"):
            return .retryLater(reason: reason, retryAfter: retryAfter)
        case (403, "InvalidProviderToken"), (403, "MissingProviderToken"), (403, "BadCertificate"),
             (403, "BadCertificateEnvironment"), (403, "Forbidden"), (403, "BadEnvironmentKeyInToken"),
             (403, "BadEnvironmentKeyIdInToken"), (403, "ExpiredProviderToken"), (403, _):
            return .configurationError(reason: reason, status: 403)
        case (429, _), (500, _), (503, _):
            return .retryLater(reason: reason, retryAfter: retryAfter)
        case (let status, _) where status >= 500:
            return .retryLater(reason: reason, retryAfter: retryAfter)
        default:
            return .rejected(reason: reason, status: response.status)
        }
    }
}
