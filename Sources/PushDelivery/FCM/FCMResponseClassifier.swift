import Foundation

/// Maps an FCM HTTP v1 answer to what the worker does about it. The FCM error code sits
/// in `error.details[]` (type `google.firebase.fcm.v1.FcmError`); the status in
/// `error.status`.
enum FCMResponseClassifier {
    /// Google asks for at least a minute of backoff on project-wide quota errors.
    static let minimumQuotaBackoff: Duration = .seconds(60)

    /// The response headers `classify` reads: the only ones a send's request keeps.
    static let headerNames = ["retry-after"]

    static func classify(_ response: HTTPResponse, now: Date = Date()) -> DeliveryOutcome {
        if response.status == 200 {
            return .delivered(id: FCMAcceptedName.read(response.body))
        }
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        let details = error?["details"] as? [[String: Any]] ?? []
        let fcmCode = details.first { ($0["@type"] as? String)?.hasSuffix("google.firebase.fcm.v1.FcmError") == true }?["errorCode"] as? String
        let status = error?["status"] as? String
        let message = error?["message"] as? String ?? bodyExcerpt(response.body)
        let code = FCMErrorCode(fcmCode ?? status ?? "HTTP \(response.status): \(message)")
        let reason = code.description
        let retryAfter = RetryAfter.parse(response.headers["retry-after"], now: now)

        switch code {
        case .unregistered, .senderIDMismatch:
            return .invalidToken(reason: reason, invalidSince: nil)
        case .invalidArgument:
            return mentionsToken(details: details, message: message)
                ? .invalidToken(reason: reason, invalidSince: nil)
                : .rejected(reason: "\(reason): \(message)", status: response.status)
        case .quotaExceeded:
            let delay = retryAfter.map { max($0, minimumQuotaBackoff) } ?? minimumQuotaBackoff
            return .retryLater(reason: reason, retryAfter: delay)
        case .unavailable, .internalError:
            return .retryLater(reason: reason, retryAfter: retryAfter)
        case .thirdPartyAuthError, .permissionDenied, .unauthenticated:
            return .configurationError(reason: reason, status: response.status)
        case .unspecifiedError, .unknown:
            if response.status == 429 || response.status >= 500 {
                return .retryLater(reason: reason, retryAfter: retryAfter)
            }
            if response.status == 401 || response.status == 403 {
                return .configurationError(reason: reason, status: response.status)
            }
            return .rejected(reason: reason, status: response.status)
        }
    }

    /// INVALID_ARGUMENT is a dead token only when the violation is about the token.
    private static func mentionsToken(details: [[String: Any]], message: String) -> Bool {
        for detail in details {
            for violation in detail["fieldViolations"] as? [[String: Any]] ?? [] {
                if (violation["field"] as? String) == "message.token" { return true }
            }
        }
        return message.localizedCaseInsensitiveContains("registration token")
    }
}
