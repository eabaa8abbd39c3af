import Foundation
@testable import PushDelivery
import Testing

@Suite("APNs and FCM answers classified")
struct ClassifierTests {
    static func apns(_ status: Int, _ body: String = "", headers: [String: String] = [:]) -> DeliveryOutcome {
        APNsResponseClassifier.classify(HTTPResponse(status: status, headers: headers, body: Array(body.utf8), httpVersion: 2))
    }

    @Test("APNs: every reason in Apple's table lands in the right class")
    func apnsTable() {
        #expect(Self.apns(200, headers: ["apns-id": "abc"]) == .delivered(id: "abc"))
        #expect(Self.apns(400, #"{"reason":"BadDeviceToken"}"#) == .invalidToken(reason: "BadDeviceToken", invalidSince: nil))
        #expect(Self.apns(410, #"{"reason":"ExpiredToken"}"#) == .invalidToken(reason: "ExpiredToken", invalidSince: nil))
        #expect(Self.apns(410, #"{"reason":"Unregistered","timestamp":1700000000123}"#)
            == .invalidToken(reason: "Unregistered", invalidSince: Date(timeIntervalSince1970: 1_700_000_000.123)))
        for reason in ["BadCollapseId", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic", "DuplicateHeaders",
                       "InvalidPushType", "MissingDeviceToken", "MissingTopic", "PayloadEmpty", "TopicDisallowed"] {
            #expect(Self.apns(400, "{\"reason\":\"\(reason)\"}") == .rejected(reason: reason, status: 400))
        }
        #expect(Self.apns(400, #"{"reason":"DeviceTokenNotForTopic"}"#) == .configurationError(reason: "DeviceTokenNotForTopic", status: 400))
        for reason in ["InvalidProviderToken", "MissingProviderToken", "BadCertificate", "BadCertificateEnvironment", "Forbidden",
                       "BadEnvironmentKeyInToken", "BadEnvironmentKeyIdInToken", "ExpiredProviderToken"] {
            #expect(Self.apns(403, "{\"reason\":\"\(reason)\"}") == .configurationError(reason: reason, status: 403))
        }
        #expect(Self.apns(404, #"{"reason":"BadPath"}"#) == .rejected(reason: "BadPath", status: 404))
        #expect(Self.apns(405, #"{"reason":"MethodNotAllowed"}"#) == .rejected(reason: "MethodNotAllowed", status: 405))
        #expect(Self.apns(413, #"{"reason":"PayloadTooLarge"}"#) == .rejected(reason: "PayloadTooLarge", status: 413))
        #expect(Self.apns(429, #"{"reason":"TooManyRequests"}"#, headers: ["retry-after": "7"])
            == .retryLater(reason: "TooManyRequests", retryAfter: .seconds(7)))
        #expect(Self.apns(500, #"{"reason":"InternalServerError"}"#) == .retryLater(reason: "InternalServerError", retryAfter: nil))
        #expect(Self.apns(503, #"{"reason":"ServiceUnavailable"}"#) == .retryLater(reason: "ServiceUnavailable", retryAfter: nil))
        #expect(Self.apns(503, #"{"reason":"Shutdown"}"#) == .retryLater(reason: "Shutdown", retryAfter: nil))
    }

    @Test("APNs: an unknown reason is kept verbatim and classified by status")
    func apnsUnknown() {
        #expect(Self.apns(400, #"{"reason":"SomethingNew"}"#) == .rejected(reason: "SomethingNew", status: 400))
        #expect(Self.apns(502, "<html>bad gateway</html>").label == "retry")
        #expect(Self.apns(502, "<html>bad gateway</html>").reason.contains("bad gateway"))
    }

    static func fcm(_ status: Int, code: String?, grpc: String, message: String = "m", violations: String = "", headers: [String: String] = [:]) -> DeliveryOutcome {
        var details: [String] = []
        if let code { details.append(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}"#) }
        if !violations.isEmpty {
            details.append(#"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"\#(violations)","description":"d"}]}"#)
        }
        let body = #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(grpc)","details":[\#(details.joined(separator: ","))]}}"#
        return FCMResponseClassifier.classify(HTTPResponse(status: status, headers: headers, body: Array(body.utf8), httpVersion: 2))
    }

    @Test("FCM: every error code in Google's table lands in the right class")
    func fcmTable() {
        let ok = FCMResponseClassifier.classify(HTTPResponse(status: 200, headers: [:], body: Array(#"{"name":"projects/p/messages/1"}"#.utf8), httpVersion: 2))
        #expect(ok == .delivered(id: "projects/p/messages/1"))
        #expect(Self.fcm(404, code: "UNREGISTERED", grpc: "NOT_FOUND") == .invalidToken(reason: "UNREGISTERED", invalidSince: nil))
        #expect(Self.fcm(403, code: "SENDER_ID_MISMATCH", grpc: "PERMISSION_DENIED") == .invalidToken(reason: "SENDER_ID_MISMATCH", invalidSince: nil))
        #expect(Self.fcm(400, code: "INVALID_ARGUMENT", grpc: "INVALID_ARGUMENT", violations: "message.token")
            == .invalidToken(reason: "INVALID_ARGUMENT", invalidSince: nil))
        #expect(Self.fcm(400, code: "INVALID_ARGUMENT", grpc: "INVALID_ARGUMENT", message: "bad ttl", violations: "message.android.ttl").label == "rejected")
        #expect(Self.fcm(429, code: "QUOTA_EXCEEDED", grpc: "RESOURCE_EXHAUSTED", headers: ["retry-after": "5"])
            == .retryLater(reason: "QUOTA_EXCEEDED", retryAfter: .seconds(60)))
        #expect(Self.fcm(429, code: "QUOTA_EXCEEDED", grpc: "RESOURCE_EXHAUSTED", headers: ["retry-after": "120"])
            == .retryLater(reason: "QUOTA_EXCEEDED", retryAfter: .seconds(120)))
        #expect(Self.fcm(503, code: "UNAVAILABLE", grpc: "UNAVAILABLE", headers: ["retry-after": "3"])
            == .retryLater(reason: "UNAVAILABLE", retryAfter: .seconds(3)))
        #expect(Self.fcm(500, code: "INTERNAL", grpc: "INTERNAL") == .retryLater(reason: "INTERNAL", retryAfter: nil))
        #expect(Self.fcm(401, code: "THIRD_PARTY_AUTH_ERROR", grpc: "UNAUTHENTICATED").label == "configuration_error")
        #expect(Self.fcm(401, code: nil, grpc: "UNAUTHENTICATED") == .configurationError(reason: "UNAUTHENTICATED", status: 401))
    }

    @Test("reasons and error codes are enums that keep an unknown text verbatim")
    func typedReasons() {
        #expect(APNsReason("BadDeviceToken") == .badDeviceToken)
        #expect(APNsReason("UnrelatedKeyIdInToken") == .unrelatedKeyIDInToken)
        #expect(APNsReason("SomethingNew") == .unknown("SomethingNew"))
        for text in ["BadCollapseId", "ExpiredProviderToken", "Unregistered", "SomethingNew"] {
            #expect(APNsReason(text).description == text)
        }
        #expect(FCMErrorCode("UNREGISTERED") == .unregistered)
        #expect(FCMErrorCode("INTERNAL") == .internalError)
        #expect(FCMErrorCode("NEW_CODE") == .unknown("NEW_CODE"))
        for text in ["SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR", "NEW_CODE"] {
            #expect(FCMErrorCode(text).description == text)
        }
    }

    @Test("Retry-After as seconds and as an HTTP date")
    func retryAfter() {
        #expect(RetryAfter.parse("30") == .seconds(30))
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(RetryAfter.parse("Tue, 14 Nov 2023 22:13:40 GMT", now: now) == .seconds(20))
        #expect(RetryAfter.parse("soon") == nil)
        #expect(RetryAfter.parse(nil) == nil)
    }

    @Test("FCM's OAuth token endpoint: overloaded or slow (5xx, 429, 408) is tried again later; any other refusal is the credentials'")
    func tokenEndpointRefusals() {
        for status in [500, 503, 429, 408] {
            #expect(FCMAccessTokenProvider.failure(status: status, reason: "busy") == .tokenEndpoint("HTTP \(status): busy"))
        }
        for status in [400, 401, 403, 404] {
            #expect(FCMAccessTokenProvider.failure(status: status, reason: "invalid_grant") == .rejected("HTTP \(status): invalid_grant"))
        }
    }
}
