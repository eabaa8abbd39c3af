import Foundation
import PushCrypto
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// Jobs in, encrypted pushes out, stale tokens gone: real RabbitMQ, PostgreSQL, emulator,
/// and `pushd worker` / `pushd cleanup` as separate processes.
@Suite("Worker end to end", .serialized)
struct FanOutTests {
    /// One in 20 devices of each kind that needs special handling; the rest are normal.
    static func mix(_ index: Int, _ platform: Platform) -> WorkerFixture.TestDevice.Kind {
        switch index % 40 {
        case 0, 2, 5, 7: return .pruned
        case 1: return .keptAfterRegistration  // an iOS slot (indices 0,1 of 4 are iOS)
        case 4, 6, 9, 11: return .flaky
        case 8, 10, 13, 15: return .legacy
        default: return .normal
        }
    }

    /// Sealed on the pool and on the HTTP/2 loop threads (`sealing_threads`), whichever the
    /// test machine's cores would choose.
    @Test(
        "a batch fans out to 2,000 devices: content sealed per device, legacy fallback, invalid pruned, transient retried, malformed dead-lettered",
        arguments: ["pool", "loops"])
    func fanOut(sealingThreads: String) async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(500, mix: Self.mix)
            #expect(devices.count == 2000)
            if sealingThreads == "loops" {
                // Half the keys recorded as checked: their devices are sealed on the loops, the
                // others (a full key check ahead) on the pool, side by side in each batch.
                let recorded = fixture.publicKeys.enumerated().filter { $0.offset < 4 }.map { DevicePublicKey.checkDigest(ofKeyText: $0.element) }
                try await fixture.registry.recordPublicKeyChecks(recorded)
            }
            // On the loops, four sealing at once: each batch's two loops get two pool helpers
            // (`JobProcessor.sealingTasks`), which a two-core machine's default never adds.
            let worker = try fixture.startWorker(environment: [
                "PUSHD_SEALING_THREADS": sealingThreads, "PUSHD_ENCRYPTION_CONCURRENCY": sealingThreads == "loops" ? "4" : "2",
            ])
            let cleanup = try fixture.startCleanup()

            // Four jobs of 125 recipients (500 devices) each, and five malformed messages.
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            var jobs: [String: NotificationJob] = [:]
            var jobOfRecipient: [String: String] = [:]
            for part in 0..<4 {
                let slice = Array(recipients[(part * 125)..<((part + 1) * 125)])
                let id = "\(fixture.prefix)-job-\(part)"
                jobs[id] = try await fixture.publish(fixture.job(id: id, recipients: slice, title: "Secret title \(part)"))
                for recipient in slice { jobOfRecipient[recipient] = id }
            }
            let malformed: [[UInt8]] = [
                Array("{not json".utf8), Array("[]".utf8), Array(#"{"version":1}"#.utf8),
                Array(#"{"version":9,"job_id":"v9"}"#.utf8), Array(String(repeating: "x", count: 70_000).utf8),
            ]
            for body in malformed { try await fixture.publishRaw(body) }

            let deliverable = devices.filter { [.normal, .legacy, .flaky].contains($0.kind) }
            let arrived = try await waitUntil(timeout: .seconds(120), every: .milliseconds(250)) {
                Set(try await fixture.received().map(\.token)).count >= deliverable.count
            }
            let arrivedCount = Set(try await fixture.received().map(\.token)).count
            #expect(arrived, "only \(arrivedCount) of \(deliverable.count) devices got their push; worker log:\n\(worker.log.suffix(3000))")

            // Every deliverable device got exactly its job's content, readable only with its key.
            let received = try await fixture.received()
            let byToken = Dictionary(grouping: received, by: \.token)
            for device in deliverable {
                guard let pushes = byToken[device.token], let push = pushes.first else {
                    Issue.record("device \(device.id) (\(device.kind)) received nothing")
                    continue
                }
                #expect(pushes.count == 1, "device \(device.id) received \(pushes.count) pushes")
                let jobID = try #require(jobOfRecipient[device.recipient])
                let job = try #require(jobs[jobID])
                #expect(push.collapseID == jobID)
                // Android: the job's tag replaces a redelivered notification; no FCM collapse
                // key unless the job asks for one (FCM keeps four per offline device).
                #expect(push.collapseKey == nil, "device \(device.id): collapse_key without delivery.collapse_id")
                let (envelope, title, message) = WorkerFixture.parts(of: push.body)
                #expect(title == "New message" && message == "Open the app to read it")
                if let keyIndex = device.keyIndex {
                    let sealed = try #require(envelope, "device \(device.id) got no envelope")
                    let opened = try fixture.keys[keyIndex].open(json: Data(sealed.utf8))
                    #expect(opened == SealedContent.plaintext(for: job), "device \(device.id)")
                    #expect(throws: EnvelopeOpenError.self) {
                        try fixture.keys[(keyIndex + 1) % fixture.keys.count].open(json: Data(sealed.utf8))
                    }
                } else {
                    #expect(envelope == nil, "legacy device \(device.id) must get the fallback only")
                    let text = String(describing: push.body)
                    #expect(!text.contains("Secret title") && !text.contains("private message"))
                }
            }
            // Nothing reached a device that should not have had it.
            let undeliverable = Set(devices.filter { ![.normal, .legacy, .flaky].contains($0.kind) }.map(\.token))
            #expect(received.filter { undeliverable.contains($0.token) }.isEmpty)

            // Invalid tokens pruned; the token re-registered after APNs's 410 timestamp kept.
            let pruned = devices.filter { $0.kind == .pruned }.map(\.id)
            let prunedGone = try await waitUntil(timeout: .seconds(60), every: .milliseconds(250)) {
                try await fixture.registry.devices(ids: pruned).isEmpty
            }
            let stillRegistered = try await fixture.registry.devices(ids: pruned).count
            #expect(prunedGone, "still registered: \(stillRegistered) of \(pruned.count)\n\(cleanup.log.suffix(2000))")
            let kept = devices.filter { $0.kind == .keptAfterRegistration }.map(\.id)
            #expect(!kept.isEmpty)
            #expect(try await fixture.registry.devices(ids: kept).count == kept.count)
            #expect(cleanup.log.contains("token kept"))

            // Every malformed message dead-lettered with its reason.
            let dead = try await fixture.deadLetters(count: malformed.count, timeout: .seconds(30))
            #expect(dead.count == malformed.count)
            for message in dead {
                let reason = message.headers["x-pushd-reason"]?.stringValue ?? ""
                #expect(reason.hasPrefix("malformed job:"), "\(reason)")
            }

            // The logs hold no plaintext and no whole token.
            let logs = worker.log + cleanup.log
            #expect(!logs.contains("Secret title") && !logs.contains("private message"))
            for device in devices.prefix(200) { #expect(!logs.contains(device.token), "a whole token was logged") }
            // The executable runs on the allocator it links (CJemalloc), with its settings.
            #expect(worker.log.contains(#""allocator":"jemalloc "#) && worker.log.contains("narenas 1, dirty_decay_ms 1000"),
                    "worker log:\n\(worker.log.prefix(2000))")
            // It sealed where it was told to (the emulator's engine is nghttp2, which has loops).
            let sealing = sealingThreads == "loops" ? #""sealing":"http2 loops""# : #""sealing":"pool""#
            #expect(worker.log.contains(sealing), "worker log:\n\(worker.log.prefix(2000))")

            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
            #expect(await cleanup.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a push that keeps failing is retried with growing delays, then dead-lettered with its reason")
    func retriesExhausted() async throws {
        try await WorkerFixture.run(maxAttempts: 3) { fixture in
            let always503 = String(("5030" + String(repeating: "ab", count: 40)).prefix(64))
            let registration = DeviceRegistration(
                recipientID: "\(fixture.prefix)-r", platform: .ios, appID: fixture.bundleID, environment: .production,
                token: always503, publicKey: fixture.publicKeys[0])
            _ = try await fixture.registry.register(registration)
            let worker = try fixture.startWorker()
            let started = ContinuousClock.now
            _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-retry", recipients: ["\(fixture.prefix)-r"], title: "t"))
            let dead = try await fixture.deadLetters(count: 1, timeout: .seconds(60))
            let elapsed = ContinuousClock.now - started
            #expect(dead.count == 1)
            let reason = dead.first?.headers["x-pushd-reason"]?.stringValue ?? ""
            #expect(reason.contains("gave up after 3 attempts"), "\(reason)")
            // Attempt 1, then 1 s and 2 s tiers before attempts 2 and 3.
            #expect(elapsed >= .seconds(3), "retries respected their delays (\(elapsed))")
            let body = try #require(dead.first?.body)
            let retry = try #require((try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["retry"] as? [String: Any])
            #expect(retry["attempt"] as? Int == 3)
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
