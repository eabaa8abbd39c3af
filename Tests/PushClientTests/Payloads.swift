import Foundation
import PushClient
import PushCrypto
import PushModel
import Testing

/// Payloads built by the worker's own code (`APNsPayloadTemplate`, `FCMMessageTemplate`,
/// `SealedContent`, `EnvelopeSealer`), and what the phone must show for them.
enum Payloads {
    /// RSA generation is the slow part: a few keys, made once.
    static let keys: [DevicePrivateKey] = (0..<3).compactMap { _ in try? DevicePrivateKey.generate() }

    static func key(_ index: Int) -> DevicePrivateKey { keys[index % keys.count] }

    static func store(_ index: Int, keyID: String = "k0") -> InMemoryKeyStore {
        InMemoryKeyStore(current: OpenSSLPrivateKey(key(index)), keyID: keyID)
    }

    static func job(_ fields: [String: Any]) throws -> NotificationJob {
        var job: [String: Any] = [
            "version": 1, "job_id": "job-\(UUID().uuidString)",
            "app": ["ios_bundle_id": "com.example.app", "fcm_project_id": "example"],
            "recipients": ["recipient_ids": ["user-1"]],
            "fallback": ["title": "New message", "message": "Open the app to read it"],
        ]
        job.merge(fields) { $1 }
        return try NotificationJob(json: JSONSerialization.data(withJSONObject: job))
    }

    /// A spread of jobs: with and without sender, data, presentation, Expo ids, Unicode.
    static func variedJobs() throws -> [NotificationJob] {
        [
            try job(["content": ["title": "Secret title", "message": "Secret message"]]),
            try job([
                "app": ["ios_bundle_id": "com.example.app", "fcm_project_id": "example",
                        "experience_id": "@acme/app", "scope_key": "@acme/app"],
                "content": ["title": "Interview with Ada", "message": "Tomorrow 10:00, room 4",
                            "data": ["url": "acme://interviews/77", "count": 3, "flag": true, "nested": ["a": [1, 2, nil]]],
                            "sender": ["id": "acme", "displayName": "Acme Recruiting", "avatarUrl": "https://example.com/a.png"]],
                "presentation": ["thread_id": "interviews", "category": "REPLY", "sound": "default", "badge": 4,
                                 "android_channel_id": "messages"],
            ]),
            try job(["content": ["title": "Ünïcødé “quotes” \\ \n tab\t", "message": "emoji 🎉 and \"escapes\"",
                                 "sender": ["id": "s-2", "displayName": "No Avatar"]]]),
            try job(["content": ["title": "", "message": "empty title is still content", "data": [:]]]),
        ]
    }

    static func value<T: Encodable>(_ encodable: T) -> PayloadValue {
        PayloadValue(json: (try? JSONEncoder().encode(encodable)) ?? Data()) ?? .null
    }

    static func value(_ json: JSONValue) -> PayloadValue {
        PayloadValue(json: Array(json.jsonText.utf8)) ?? .null
    }

    static func sealed(_ job: NotificationJob, for key: DevicePrivateKey, keyID: String? = nil) throws -> String {
        let plaintext = try #require(SealedContent.plaintext(for: job))
        return try EnvelopeSealer.sealJSON(plaintext, for: try key.publicKey, keyID: keyID)
    }

    static func apns(_ job: NotificationJob, sealedFor key: DevicePrivateKey?, keyID: String? = nil) throws -> [UInt8] {
        let envelope = try key.map { key in try sealed(job, for: key, keyID: keyID) }
        return try APNsPayloadTemplate(job: job).payload(encryptedData: envelope)
    }

    /// The whole FCM v1 request body, as the emulator records it.
    static func fcm(_ job: NotificationJob, sealedFor key: DevicePrivateKey?, keyID: String? = nil) throws -> [UInt8] {
        let envelope = try key.map { key in try sealed(job, for: key, keyID: keyID) }
        return try FCMMessageTemplate(job: job, priority: .high, collapseKey: job.jobID, ttlSeconds: 3600)
            .body(token: "fcm-token", encryptedData: envelope)
    }

    /// What the phone must show once it decrypted `job` (its private content over the
    /// presentation), on either platform.
    static func expectedDisplay(_ job: NotificationJob, platform: DisplayedNotification.Platform) throws -> DisplayedNotification {
        let content = try #require(job.content)
        var data = content.data.mapValues(value)
        var sender: Sender?
        if let jobSender = content.sender {
            sender = Sender(id: jobSender.id, displayName: jobSender.displayName, avatarURL: jobSender.avatarURL)
            var fields: [String: PayloadValue] = ["id": .string(jobSender.id), "displayName": .string(jobSender.displayName)]
            if let avatar = jobSender.avatarURL { fields["avatarUrl"] = .string(avatar) }
            data["sender"] = .object(fields)
        }
        let presentation = job.presentation
        return DisplayedNotification(
            platform: platform, title: content.title, body: content.message,
            threadID: platform == .ios ? presentation.threadID : nil, category: presentation.category,
            sound: presentation.sound, badge: presentation.badge,
            androidChannelID: platform == .android ? presentation.androidChannelID : nil,
            data: data, experienceID: job.app.experienceID, scopeKey: job.app.scopeKey, sender: sender)
    }

    /// What the phone shows when it does not decrypt: the fallback text and presentation.
    static func expectedFallback(_ job: NotificationJob, platform: DisplayedNotification.Platform) -> DisplayedNotification {
        let presentation = job.presentation
        return DisplayedNotification(
            platform: platform, title: job.fallback.title, body: job.fallback.message,
            threadID: platform == .ios ? presentation.threadID : nil, category: presentation.category,
            sound: presentation.sound, badge: presentation.badge,
            androidChannelID: platform == .android ? presentation.androidChannelID : nil,
            experienceID: job.app.experienceID, scopeKey: job.app.scopeKey)
    }

    static func read(_ bytes: [UInt8], store: any KeyStore) async -> PushReading {
        await LiveActivityEnricher(keyStore: store, staging: InMemoryEnrichmentStaging()).readAny(json: bytes)
    }
}

extension PushReading {
    var alert: AlertReading? {
        if case .alert(let reading) = self { return reading }
        return nil
    }

    var liveActivity: LiveActivityReading? {
        if case .liveActivity(let reading) = self { return reading }
        return nil
    }
}
