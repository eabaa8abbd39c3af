import Foundation
import PushCrypto
import PushModel
import PushTestSupport
import Testing

/// Once most keys are in a worker's cache, its device lookups send each key's SHA-256 and
/// take the text from the cache instead of PostgreSQL; every envelope still opens with its
/// own device's key, and only with it.
@Suite("Device keys read by digest", .serialized)
struct KeyDigestLookupTests {
    @Test("three jobs to the same devices: the later lookups take the keys from the cache, every envelope opens with its device's key")
    func repeatedJobs() async throws {
        try await WorkerFixture.run { fixture in
            // Every fourth device is a legacy app without a key (fallback text only).
            let devices = try await fixture.registerRecipients(10) { index, _ in index % 4 == 3 ? .legacy : .normal }
            let keyed = devices.filter { $0.keyIndex != nil }
            let metricsPort = try FreePort.find()
            let worker = try fixture.startWorker(environment: ["PUSHD_METRICS_PORT": String(metricsPort)])
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            var jobs: [String: NotificationJob] = [:]
            for round in 0..<3 {
                // One job at a time, so each lookup comes after the keys of the one before.
                let id = "\(fixture.prefix)-round-\(round)"
                jobs[id] = try await fixture.publish(fixture.job(id: id, recipients: recipients, title: "Secret \(round)"))
                let arrived = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                    try await fixture.received().filter { $0.collapseID == id }.count == devices.count
                }
                #expect(arrived, "round \(round): worker log:\n\(worker.log.suffix(2000))")
            }
            // The first lookup read every key from PostgreSQL (an empty cache); at least the
            // last one took them from the cache.
            let fromCache = try WorkerFixture.metric(#"pushd_public_key_texts_total{source="cache"}"#, port: metricsPort)
            let fromDatabase = try WorkerFixture.metric(#"pushd_public_key_texts_total{source="database"}"#, port: metricsPort)
            #expect(fromDatabase >= Double(keyed.count))
            #expect(fromCache >= Double(keyed.count))
            #expect(fromCache + fromDatabase == Double(3 * keyed.count))

            let byToken = Dictionary(grouping: try await fixture.received(), by: \.token)
            for device in devices {
                let pushes = byToken[device.token] ?? []
                #expect(pushes.count == 3, "device \(device.id) received \(pushes.count) pushes")
                for push in pushes {
                    let job = try #require(jobs[push.collapseID ?? ""])
                    let (envelope, _, _) = WorkerFixture.parts(of: push.body)
                    guard let keyIndex = device.keyIndex else {
                        #expect(envelope == nil, "legacy device \(device.id) must get the fallback only")
                        continue
                    }
                    let sealed = try #require(envelope, "device \(device.id) got no envelope")
                    #expect(try fixture.keys[keyIndex].open(json: Data(sealed.utf8)) == SealedContent.plaintext(for: job))
                    #expect(throws: EnvelopeOpenError.self) {
                        try fixture.keys[(keyIndex + 1) % fixture.keys.count].open(json: Data(sealed.utf8))
                    }
                }
            }
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
