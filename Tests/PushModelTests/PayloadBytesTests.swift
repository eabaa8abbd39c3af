import Foundation
import PushModel
import Testing

/// The byte-level payload writers against the string-built JSON they replaced.
@Suite("Payload bytes")
struct PayloadBytesTests {
    static let trickyTitle = "Quote \" backslash \\ line\nbreak \u{1} separator \u{2028} é 🎉"
    static let trickyMessage = "tab\there, € and \u{2029}"

    static func job() throws -> NotificationJob {
        let document: [String: Any] = [
            "version": 1, "job_id": "bytes-1", "app": ["ios_bundle_id": "com.example.app", "fcm_project_id": "example-app"],
            "recipients": ["recipient_ids": ["user-1"]],
            "content": ["title": "t", "message": "m"],
            "fallback": ["title": trickyTitle, "message": trickyMessage],
        ]
        return try NotificationJob(json: try JSONSerialization.data(withJSONObject: document))
    }

    /// RFC 8259 quoting scalar by scalar, U+2028/U+2029 escaped: the former `JSONText.quote`.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20 || c.value == 0x2028 || c.value == 0x2029:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    @Test("FCM body: exactly the bytes the string builder wrote", arguments: [nil, #"{"encrypted_key":"AB+/","kid":"k\"1"}"#])
    func fcmBody(envelope: String?) throws {
        let body = try FCMMessageTemplate(job: try Self.job(), priority: .high, collapseKey: "c\"1", ttlSeconds: 60)
            .body(token: "tok\u{2028}en", encryptedData: envelope)
        var data: [String] = []
        if let envelope { data.append(Self.quote("encrypted_data") + ":" + Self.quote(envelope)) }
        data.append(Self.quote("title") + ":" + Self.quote(Self.trickyTitle))
        data.append(Self.quote("message") + ":" + Self.quote(Self.trickyMessage))
        let expected = "{\"message\":{\"token\":" + Self.quote("tok\u{2028}en") + ",\"data\":{" + data.joined(separator: ",")
            + "},\"android\":{\"priority\":\"HIGH\",\"ttl\":\"60s\",\"collapse_key\":" + Self.quote("c\"1") + "}}}"
        #expect(String(decoding: body, as: UTF8.self) == expected)
        #expect((try? JSONSerialization.jsonObject(with: Data(body))) != nil)
    }

    @Test("APNs payload: the envelope spliced in as a JSON string that decodes back to it")
    func apnsPayload() throws {
        let envelope = "{\"encrypted_key\":\"AB+/==\",\"kid\":\"k\\\"1\u{1}\"}\n"
        let payload = try APNsPayloadTemplate(job: try Self.job()).payload(encryptedData: envelope)
        let text = String(decoding: payload, as: UTF8.self)
        #expect(text.contains(#""encrypted_data":"{\"encrypted_key\":\"AB+/==\",\"kid\":\"k\\\"1\u0001\"}\u000a""#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(object["encrypted_data"] as? String == envelope)
        let alert = try #require((object["aps"] as? [String: Any])?["alert"] as? [String: Any])
        #expect(alert["title"] as? String == Self.trickyTitle)
    }

    @Test("an envelope given already quoted is spliced in to exactly the bytes of the string path")
    func quotedEnvelope() throws {
        let envelope = #"{"encrypted_key":"AB+/","cipher_text":"Zm9v","kid":"k\"1"}"#
        let quoted = Array(Self.quote(envelope).utf8)
        let apns = APNsPayloadTemplate(job: try Self.job())
        #expect(try apns.payload(quotedEncryptedData: quoted) == apns.payload(encryptedData: envelope))
        let fcm = FCMMessageTemplate(job: try Self.job(), priority: .normal, collapseKey: nil, ttlSeconds: nil)
        #expect(try fcm.body(token: "t", quotedEncryptedData: quoted, encryptedDataLength: envelope.utf8.count)
            == fcm.body(token: "t", encryptedData: envelope))
        // FCM's data limit counts the text the value encodes, not its quoted form.
        let large = String(repeating: "\"", count: 5000)
        let largeQuoted = Array(Self.quote(large).utf8)
        #expect(throws: PayloadError.self) { try fcm.body(token: "t", encryptedData: large) }
        #expect(throws: PayloadError.self) {
            try fcm.body(token: "t", quotedEncryptedData: largeQuoted, encryptedDataLength: large.utf8.count)
        }
        let fits = String(repeating: "\"", count: 1500)
        #expect(throws: Never.self) {
            try fcm.body(token: "t", quotedEncryptedData: Array(Self.quote(fits).utf8), encryptedDataLength: fits.utf8.count)
        }
    }
}
