import Foundation
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// A job can expire before a worker reaches it: a producer's job behind a backlog, the chunks
/// a worker split it into, a retry waiting in its tier while consuming was paused. Nothing is
/// sent then, and nothing is lost either: a job that asked for `job.completed` still gets it
/// (its devices counted as retries exhausted), and a retry's devices are dead-lettered by id,
/// as when the retry policy gives up.
@Suite("Expired jobs, chunks and retries end to end", .serialized)
struct ExpiredFollowUpTests {
    static func plan(_ prefix: String) -> [OutcomeEventTests.Planned] {
        [
            .init(recipient: "\(prefix)-x", platform: .ios, tokenPrefix: "c0de", outcome: .retriesExhausted),
            .init(recipient: "\(prefix)-x", platform: .android, tokenPrefix: "fcm-", outcome: .retriesExhausted),
            .init(recipient: "\(prefix)-y", platform: .ios, tokenPrefix: "c0de", outcome: .retriesExhausted),
        ]
    }

    @Test("an expired job and expired chunks that asked for job.completed send nothing and still complete, counted as retries exhausted")
    func expiredJobsComplete() async throws {
        try await WorkerFixture.run { fixture in
            let registered = try await OutcomeEventTests.register(Self.plan(fixture.prefix), fixture)
            let events = try await fixture.subscribe(toEvents: JobCompletedEvent.name)
            let worker = try fixture.startWorker()
            let anHourAgo = Int(Date().timeIntervalSince1970) - 3600
            func late(_ id: String, _ recipients: [String]) -> [String: Any] {
                var job = fixture.job(id: "\(fixture.prefix)-\(id)", recipients: recipients.map { "\(fixture.prefix)-\($0)" }, title: "Too late")
                job["report"] = ["completed_event": true]
                job["delivery"] = ["expires_at": anHourAgo]
                return job
            }
            // A producer's job, and the chunks a worker made of another, published where a
            // worker publishes them.
            _ = try await fixture.publish(late("whole", ["x"]))
            let split = try JobDocument(json: JSONSerialization.data(withJSONObject: late("split", ["x", "y"])))
            let chunks = split.chunks(chunkSize: 1)
            #expect(chunks.count == 2)
            for chunk in chunks {
                try await fixture.amqp.publish(PublishRequest(
                    exchange: fixture.topology.retryExchange, routingKey: Topology.chunkRoutingKey,
                    message: OutgoingMessage(body: chunk.json, contentType: "application/json", messageID: chunk.jobID)))
            }

            let completed = try await fixture.collect(from: events, count: 2, timeout: .seconds(60))
            #expect(completed.count == 2, "worker log:\n\(worker.log.suffix(3000))")
            let byJob = try Dictionary(uniqueKeysWithValues: completed.map { message in
                let event = try JSONDecoder().decode(JobCompletedEvent.self, from: Data(message.body))
                return (event.jobID, event)
            })
            let whole = try #require(byJob["\(fixture.prefix)-whole"])
            #expect(whole.chunks == 1 && whole.counts[.ios]?[.retriesExhausted] == 1 && whole.counts[.android]?[.retriesExhausted] == 1)
            #expect(whole.failedDeviceIDs == registered.filter { $0.0.recipient.hasSuffix("-x") }.map(\.1).sorted())
            let parts = try #require(byJob["\(fixture.prefix)-split"])
            #expect(parts.chunks == 2 && parts.counts[.ios]?[.retriesExhausted] == 2 && parts.counts[.android]?[.retriesExhausted] == 1)
            #expect(parts.counts[.ios]?[.delivered] ?? 0 == 0)
            #expect(parts.failedDeviceIDs == registered.map(\.1).sorted())
            // Both events went out after their messages' follow-ups: a dead letter would be there.
            #expect(try await fixture.amqp.statistics(queue: fixture.topology.deadQueue).messages == 0)
            #expect(try await fixture.received().isEmpty, "a push was sent for an expired job")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a retry that comes past the job's expiry sends nothing; its devices are dead-lettered by id with the reason")
    func expiredRetryDeadLettered() async throws {
        try await WorkerFixture.run { fixture in
            let registered = try await OutcomeEventTests.register(Self.plan(fixture.prefix), fixture)
            let worker = try fixture.startWorker()
            // What a worker scheduled two hours ago for a job that lived for a minute.
            var job = fixture.job(id: "\(fixture.prefix)-retry", recipients: ["\(fixture.prefix)-x", "\(fixture.prefix)-y"], title: "Too late")
            job["delivery"] = ["ttl_seconds": 60]
            job["retry"] = [
                "attempt": 2, "first_attempt_at": RFC3339.string(from: Date().addingTimeInterval(-7200)),
                "device_ids": registered.map(\.1),
            ]
            try await fixture.amqp.publish(PublishRequest(
                exchange: fixture.topology.retryExchange, routingKey: Topology.dueRoutingKey,
                message: OutgoingMessage(
                    body: Array(try JSONSerialization.data(withJSONObject: job)), contentType: "application/json",
                    messageID: "\(fixture.prefix)-retry")))

            let dead = try await fixture.deadLetters(count: 1, timeout: .seconds(60))
            #expect(dead.count == 1, "worker log:\n\(worker.log.suffix(3000))")
            let message = try #require(dead.first)
            let reason = message.headers["x-pushd-reason"]?.stringValue ?? ""
            #expect(reason.contains("expired before this attempt"), "\(reason)")
            let retry = try #require(try NotificationJob(json: Data(message.body)).retry)
            #expect(retry.deviceIDs.sorted() == registered.map(\.1).sorted() && retry.attempt == 2)
            #expect(try await fixture.received().isEmpty, "a push was sent for an expired retry")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a Live Activity retry that comes past the job's expiry sends nothing; its devices are dead-lettered, their tokens kept")
    func expiredActivityRetry() async throws {
        try await WorkerFixture.run { fixture in
            let activity = "meeting-\(fixture.prefix)"
            let recipient = "\(fixture.prefix)-r"
            let device = try await fixture.registerActivityDevice(recipient: recipient, keyIndex: 0, update: "c0de", activityID: activity)
            let worker = try fixture.startWorker()
            var job = fixture.activityJob(
                id: "\(fixture.prefix)-end", event: "end", activityID: activity, timestamp: 1_764_548_160, recipients: [recipient], status: "done")
            job["delivery"] = ["ttl_seconds": 60]
            job["retry"] = ["attempt": 2, "first_attempt_at": RFC3339.string(from: Date().addingTimeInterval(-7200)), "device_ids": [device.id]]
            try await fixture.amqp.publish(PublishRequest(
                exchange: fixture.topology.retryExchange, routingKey: Topology.dueRoutingKey,
                message: OutgoingMessage(
                    body: Array(try JSONSerialization.data(withJSONObject: job)), contentType: "application/json", messageID: "\(fixture.prefix)-end")))

            let dead = try await fixture.deadLetters(count: 1, timeout: .seconds(60))
            #expect(dead.count == 1, "worker log:\n\(worker.log.suffix(3000))")
            let message = try #require(dead.first)
            #expect((message.headers["x-pushd-reason"]?.stringValue ?? "").contains("expired before this attempt"))
            #expect(try NotificationJob(json: Data(message.body)).retry?.deviceIDs == [device.id])
            #expect(try await fixture.acceptedPushes().isEmpty, "a push was sent for an expired retry")
            // The end was not sent: the activity's update token stays until an end is.
            let updates = try await fixture.registry.liveActivityTargets(
                appID: fixture.bundleID, kind: .activityUpdate, activityID: activity, recipientIDs: [recipient])
            #expect(updates.map(\.token) == [device.update])
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
