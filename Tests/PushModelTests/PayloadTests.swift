import Foundation
import PushCrypto
import PushModel
import Testing

@Suite("Payload builders")
struct PayloadTests {
    static let device: DevicePrivateKey = {
        // One key for the suite; a failure here fails every test that uses it.
        (try? DevicePrivateKey.generate()) ?? { preconditionFailure("RSA key generation failed") }()
    }()

    static func job() throws -> NotificationJob {
        try NotificationJob(json: Data(JobDecodingTests.complete.utf8))
    }

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test("the sealed plaintext carries title, message, body with sender, experienceId and scopeKey")
    func sealedContent() throws {
        let plaintext = try Self.object(try #require(SealedContent.plaintext(for: try Self.job())))
        #expect(plaintext["title"] as? String == "Anna Svensson")
        #expect(plaintext["message"] as? String == "Can we move the interview?")
        #expect(plaintext["experienceId"] as? String == "@acme/app")
        #expect(plaintext["scopeKey"] as? String == "@acme/app")
        let body = try #require(plaintext["body"] as? [String: Any])
        #expect(body["url"] as? String == "acme://x")
        let sender = try #require(body["sender"] as? [String: String])
        #expect(sender == ["id": "c-1", "displayName": "Acme", "avatarUrl": "https://example.com/a.png"])
    }

    @Test("APNs: fallback alert, mutable-content, presentation, and encrypted_data that decrypts to the content")
    func apnsPayload() throws {
        let job = try Self.job()
        let plaintext = try #require(SealedContent.plaintext(for: job))
        let envelope = try EnvelopeSealer.sealJSON(plaintext, for: try Self.device.publicKey, keyID: "k1")
        let payload = try Self.object(try APNsPayloadTemplate(job: job).payload(encryptedData: envelope))
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect(aps["alert"] as? [String: String] == ["title": "New message", "body": "Open the app to read it"])
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["thread-id"] as? String == "t-1")
        #expect(aps["category"] as? String == "MSG")
        #expect(aps["sound"] as? String == "default")
        #expect(aps["badge"] as? Int == 2)
        #expect(payload["experienceId"] as? String == "@acme/app")
        let sealed = try #require(payload["encrypted_data"] as? String)
        #expect(try Self.device.open(json: Data(sealed.utf8)) == plaintext)
        // Nothing private in clear text.
        let clear = String(decoding: try APNsPayloadTemplate(job: job).payload(encryptedData: envelope), as: UTF8.self)
        #expect(!clear.contains("Anna") && !clear.contains("interview") && !clear.contains("avatar"))
    }

    @Test("APNs for a device without a key: fallback only, no private content, no mutable-content")
    func apnsLegacy() throws {
        let payload = try APNsPayloadTemplate(job: try Self.job()).payload(encryptedData: nil)
        let object = try Self.object(payload)
        #expect(object["encrypted_data"] == nil)
        let aps = try #require(object["aps"] as? [String: Any])
        #expect(aps["mutable-content"] == nil)
        #expect((aps["alert"] as? [String: String])?["title"] == "New message")
        let text = String(decoding: payload, as: UTF8.self)
        #expect(!text.contains("Anna") && !text.contains("interview") && !text.contains("acme://x"))
    }

    @Test("FCM: data-only, every value a string, encrypted_data decrypts, android options")
    func fcmMessage() throws {
        let job = try Self.job()
        let plaintext = try #require(SealedContent.plaintext(for: job))
        let envelope = try EnvelopeSealer.sealJSON(plaintext, for: try Self.device.publicKey)
        let body = try FCMMessageTemplate(job: job, priority: .high, collapseKey: "job-42", ttlSeconds: 3600)
            .body(token: "fcm-token-1", encryptedData: envelope)
        let message = try #require(try Self.object(body)["message"] as? [String: Any])
        #expect(message["notification"] == nil)
        #expect(message["token"] as? String == "fcm-token-1")
        let data = try #require(message["data"] as? [String: Any])
        #expect(data.values.allSatisfy { $0 is String })
        #expect(data["title"] as? String == "New message")
        #expect(data["message"] as? String == "Open the app to read it")
        #expect(data["channelId"] as? String == "messages")
        #expect(data["badge"] as? String == "2")
        #expect(data["experienceId"] as? String == "@acme/app")
        let sealed = try #require(data["encrypted_data"] as? String)
        #expect(try Self.device.open(json: Data(sealed.utf8)) == plaintext)
        let android = try #require(message["android"] as? [String: String])
        #expect(android == ["priority": "HIGH", "ttl": "3600s", "collapse_key": "job-42"])
    }

    @Test("an oversize payload is a clear error, never truncated")
    func tooLarge() throws {
        var job = try Self.job()
        job.fallback.message = String(repeating: "x", count: 3000)
        let envelope = try EnvelopeSealer.sealJSON(Array(repeating: 0x41, count: 1500), for: try Self.device.publicKey)
        #expect(throws: PayloadError.self) { try APNsPayloadTemplate(job: job).payload(encryptedData: envelope) }
        #expect(throws: PayloadError.self) {
            try FCMMessageTemplate(job: job, priority: .high, collapseKey: nil, ttlSeconds: nil).body(token: "t", encryptedData: envelope)
        }
    }

    @Test("the largest plaintext the README promises still fits APNs with an empty fallback")
    func documentedLimit() throws {
        var job = try Self.job()
        job.fallback = .init(title: "", message: "")
        job.presentation = .init()
        job.app = .init(iosBundleID: "com.acme.app")
        let key = try Self.device.publicKey
        let fits = try EnvelopeSealer.sealJSON(Array(repeating: 0x41, count: 2667), for: key)
        #expect(try APNsPayloadTemplate(job: job).payload(encryptedData: fits).count <= 4096)
        let over = try EnvelopeSealer.sealJSON(Array(repeating: 0x41, count: 2670), for: key)
        #expect(throws: PayloadError.self) { try APNsPayloadTemplate(job: job).payload(encryptedData: over) }
    }
}

extension PayloadTests {
    @Test("FCM: the notification tag replaces a redelivered notification; collapse_key only when asked for")
    func fcmTagAndCollapseKey() throws {
        let job = try Self.job()
        let plain = try FCMMessageTemplate(job: job, priority: .high, collapseKey: nil, ttlSeconds: nil, notificationTag: "job-42")
            .body(token: "t", encryptedData: nil)
        let message = try #require(try Self.object(plain)["message"] as? [String: Any])
        #expect((message["data"] as? [String: String])?["tag"] == "job-42")
        #expect((message["android"] as? [String: String])?["collapse_key"] == nil)
    }
}
