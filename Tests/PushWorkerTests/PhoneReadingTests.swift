import Foundation
import PushClient
import PushCrypto
import PushModel
import PushTestSupport
import Testing

/// Every payload the worker delivered, read by `PushClient` as the phone reads it, shows
/// exactly its job's content (or, for a keyless device, exactly its fallback).
@Suite("Worker payloads as the phone reads them", .serialized)
struct PhoneReadingTests {
    @Test("alerts and legacy payloads from a real worker display exactly the job's content on iOS and Android")
    func everyPayloadReadsAsItsJob() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(6) { index, _ in index % 5 == 3 ? .legacy : .normal }
            let worker = try fixture.startWorker()
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            var rich = fixture.job(id: "\(fixture.prefix)-rich", recipients: Array(recipients.prefix(3)), title: "Interview with Ada")
            rich["presentation"] = ["thread_id": "interviews", "category": "REPLY", "sound": "default", "badge": 2,
                                    "android_channel_id": "messages"]
            var plain = fixture.job(id: "\(fixture.prefix)-plain", recipients: Array(recipients.suffix(3)), title: "Ünïcødé “title”")
            plain["content"] = ["title": "Ünïcødé “title”", "message": "no sender, nested data", "data": ["n": [1, true, "x"]]]
            let jobs = [try await fixture.publish(rich), try await fixture.publish(plain)]
            let jobOfRecipient = Dictionary(uniqueKeysWithValues: recipients.enumerated().map { ($1, jobs[$0 < 3 ? 0 : 1]) })

            let arrived = try await waitUntil(timeout: .seconds(60), every: .milliseconds(250)) {
                Set(try await fixture.emulator.pushes().compactMap { $0["token"] as? String }).count >= devices.count
            }
            #expect(arrived, "worker log:\n\(worker.log.suffix(2000))")
            let records = try await fixture.emulator.pushes()
            let byToken = Dictionary(grouping: records) { $0["token"] as? String ?? "" }
            var decrypted = 0, legacy = 0
            for device in devices {
                let body = try #require(byToken[device.token]?.first?["body"] as? String, "device \(device.id) got nothing")
                let job = try #require(jobOfRecipient[device.recipient])
                let platform: DisplayedNotification.Platform = device.platform == .ios ? .ios : .android
                let store = device.keyIndex.map { InMemoryKeyStore(current: OpenSSLPrivateKey(fixture.keys[$0])) } ?? InMemoryKeyStore()
                let reading = await LiveActivityEnricher(keyStore: store, staging: InMemoryEnrichmentStaging())
                    .readAny(json: Array(body.utf8), platform: platform)
                guard case .alert(let alert) = reading else {
                    Issue.record("device \(device.id): not read as an alert")
                    continue
                }
                if let keyIndex = device.keyIndex {
                    #expect(alert.fallbackReason == nil, "device \(device.id): \(alert.fallbackReason?.description ?? "")")
                    #expect(alert.display == Self.expected(job, platform: platform, decrypted: true), "device \(device.id)")
                    // Another device's key does not open it.
                    let other = InMemoryKeyStore(current: OpenSSLPrivateKey(fixture.keys[(keyIndex + 1) % fixture.keys.count]))
                    #expect(NotificationReader(keyStore: other).readAPNsOrFCM(body, platform).fallbackReason == .wrongKey)
                    decrypted += 1
                } else {
                    #expect(alert.fallbackReason == .legacyPayload)
                    #expect(alert.display == Self.expected(job, platform: platform, decrypted: false), "legacy device \(device.id)")
                    legacy += 1
                }
            }
            #expect(decrypted > 0 && legacy > 0)
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    /// What the phone must show for `job`: the sealed content when decrypted, else the
    /// fallback, each with the job's presentation as the platform carries it.
    static func expected(_ job: NotificationJob, platform: DisplayedNotification.Platform, decrypted: Bool) -> DisplayedNotification {
        let presentation = job.presentation
        var display = DisplayedNotification(
            platform: platform, title: job.fallback.title, body: job.fallback.message,
            threadID: platform == .ios ? presentation.threadID : nil, category: presentation.category,
            sound: presentation.sound, badge: presentation.badge,
            androidChannelID: platform == .android ? presentation.androidChannelID : nil,
            experienceID: job.app.experienceID, scopeKey: job.app.scopeKey)
        guard decrypted, let content = job.content else { return display }
        display.title = content.title
        display.body = content.message
        var data = content.data.compactMapValues { PayloadValue(json: Array($0.jsonText.utf8)) }
        if let sender = content.sender {
            display.sender = Sender(id: sender.id, displayName: sender.displayName, avatarURL: sender.avatarURL)
            var fields: [String: PayloadValue] = ["id": .string(sender.id), "displayName": .string(sender.displayName)]
            if let avatar = sender.avatarURL { fields["avatarUrl"] = .string(avatar) }
            data["sender"] = .object(fields)
        }
        display.data = data
        return display
    }
}

extension NotificationReader {
    /// The body as the emulator recorded it: an APNs payload, or an FCM v1 request.
    func readAPNsOrFCM(_ body: String, _ platform: DisplayedNotification.Platform) -> AlertReading {
        let value = PayloadValue(json: Array(body.utf8)) ?? .null
        return platform == .ios ? readAPNs(value) : readFCM(value["message"]?["data"] ?? .null)
    }
}
