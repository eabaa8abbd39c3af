import Foundation
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// A retry or a chunk is a message workers made for devices already promised an outcome:
/// when it waited in its queue past the job's expiry (a backlog, consuming paused during a
/// database outage), its devices are not sent to, and not dropped either: they are
/// dead-lettered by id with the reason and counted in `job.completed`.
@Suite("Expired retries and chunks end to end", .serialized)
struct ExpiredFollowUpTests {
    @Test("chunks that come past the job's expiry send nothing, are dead-lettered with their devices, and complete the job's report")
    func expiredChunks() async throws {
        try await WorkerFixture.run { fixture in
            let plan = [
                OutcomeEventTests.Planned(recipient: "\(fixture.prefix)-x", platform: .ios, tokenPrefix: "c0de", outcome: .retriesExhausted),
                OutcomeEventTests.Planned(recipient: "\(fixture.prefix)-x", platform: .android, tokenPrefix: "fcm-", outcome: .retriesExhausted),
                OutcomeEventTests.Planned(recipient: "\(fixture.prefix)-y", platform: .ios, tokenPrefix: "c0de", outcome: .retriesExhausted),
            ]
            let registered = try await OutcomeEventTests.register(plan, fixture)
            let events = try await fixture.subscribe(toEvents: JobCompletedEvent.name)
            // The chunks a worker made of a job that expired an hour ago, published where a
            // worker publishes them.
            var job = fixture.job(id: "\(fixture.prefix)-late", recipients: ["\(fixture.prefix)-x", "\(fixture.prefix)-y"], title: "Too late")
            job["report"] = ["completed_event": true]
            job["delivery"] = ["expires_at": Int(Date().timeIntervalSince1970) - 3600]
            let document = try JobDocument(json: JSONSerialization.data(withJSONObject: job))
            let chunks = try document.chunks(chunkSize: 1)
            #expect(chunks.count == 2)
            let worker = try fixture.startWorker()
            for chunk in chunks {
                try await fixture.amqp.publish(PublishRequest(
                    exchange: fixture.topology.retryExchange, routingKey: Topology.chunkRoutingKey,
                    message: OutgoingMessage(body: chunk.json, contentType: "application/json", messageID: chunk.jobID)))
            }

            let completed = try await fixture.collect(from: events, count: 1, timeout: .seconds(60))
            #expect(completed.count == 1, "worker log:\n\(worker.log.suffix(3000))")
            let event = try JSONDecoder().decode(JobCompletedEvent.self, from: Data(try #require(completed.first).body))
            #expect(event.jobID == "\(fixture.prefix)-late" && event.chunks == 2)
            #expect(event.counts[.ios]?[.retriesExhausted] == 2 && event.counts[.android]?[.retriesExhausted] == 1)
            #expect(event.counts[.ios]?[.delivered] ?? 0 == 0)
            #expect(event.failedDeviceIDs == registered.map(\.1).sorted())

            let dead = try await fixture.deadLetters(count: 2, timeout: .seconds(30))
            #expect(dead.count == 2)
            var named: [Int64] = []
            for message in dead {
                let reason = message.headers["x-pushd-reason"]?.stringValue ?? ""
                #expect(reason.contains("expired before this attempt"), "\(reason)")
                let retry = try #require(try NotificationJob(json: Data(message.body)).retry)
                named += retry.deviceIDs
            }
            #expect(named.sorted() == registered.map(\.1).sorted())

            // The fixture's own emulator: both chunks were settled before the event went out.
            #expect(try await fixture.received().isEmpty, "a push was sent for an expired chunk")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
