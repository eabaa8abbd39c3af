import Foundation
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// A PostgreSQL outage longer than twenty requeue cycles: jobs and `token.invalid` events
/// wait, nothing is dead-lettered, every device gets its push and every dead token is pruned.
/// Stops the shared test PostgreSQL, so it is part of `FaultTests` (the fault stage,
/// `PUSHD_FAULT_TESTS=1`), serialized with the other restarts.
extension FaultTests {
    @Test("PostgreSQL down for 35 s under a backlog: the worker pauses and the cleanup consumer holds its events; nothing is dead-lettered, every device gets its push, every dead token is pruned")
    func longOutage() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(100, mix: { _, _ in .normal })
            var stale: [Int64: String] = [:]
            for index in 0..<10 {
                let token = TokenHygieneTests.iosToken("c0de")
                let id = try await fixture.registry.register(DeviceRegistration(
                    recipientID: "\(fixture.prefix)-stale-\(index)", platform: .ios, appID: fixture.bundleID, environment: .production,
                    token: token, publicKey: nil)).deviceID
                stale[id] = token
            }
            let worker = try fixture.startWorker()
            let cleanup = try fixture.startCleanup()
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-before", recipients: Array(recipients.prefix(10)), title: "Secret"))
            let started = try await waitUntil(timeout: .seconds(60), every: .milliseconds(50)) {
                try await fixture.received().count >= 40
            }
            #expect(started)

            let stopped = try ChildProcess.run("/bin/bash", [Self.services, "pg-stop"])
            #expect(stopped.status == 0, "pg-stop: \(stopped.errorText)")
            // A backlog published during the outage.
            for part in 0..<9 {
                let slice = Array(recipients[(10 + part * 10)..<(20 + part * 10)])
                _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-during-\(part)", recipients: slice, title: "Secret"))
            }
            // Dead tokens reported during the outage: the cleanup consumer must hold them.
            let failedAt = RFC3339.string(from: Date().addingTimeInterval(3600))
            for token in stale.values {
                let body = #"{"version":1,"event":"token.invalid","event_id":"\#(UUID().uuidString)","occurred_at":"\#(failedAt)","platform":"ios","app_id":"\#(fixture.bundleID)","environment":"production","token":"\#(token)","reason":"BadDeviceToken"}"#
                try await fixture.amqp.publish(PublishRequest(
                    exchange: fixture.topology.eventsExchange, routingKey: Topology.tokenInvalidRoutingKey,
                    message: OutgoingMessage(body: Array(body.utf8), contentType: "application/json")))
            }
            // Longer than twenty one-second requeue cycles, measured by the worker's own
            // probing rather than a sleep: wait until it has paused, then for 35 s of outage.
            let paused = await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                worker.log.contains("consuming paused")
            }
            #expect(paused, "the worker paused consuming\n\(worker.log.suffix(2000))")
            let outageEnds = ContinuousClock.now + .seconds(35)
            _ = await waitUntil(timeout: .seconds(40), every: .seconds(1)) { ContinuousClock.now >= outageEnds }
            let restarted = try ChildProcess.run("/bin/bash", [Self.services, "pg-start"])
            #expect(restarted.status == 0, "pg-start: \(restarted.errorText)")

            let tokens = Set(devices.map(\.token))
            let all = try await waitUntil(timeout: .seconds(120), every: .milliseconds(250)) {
                Set(try await fixture.received().map(\.token)).isSuperset(of: tokens)
            }
            let missing = tokens.subtracting(try await fixture.received().map(\.token)).count
            #expect(all, "\(missing) devices never got their push\n\(worker.log.suffix(3000))")
            let pruned = try await waitUntil(timeout: .seconds(60), every: .milliseconds(250)) {
                try await fixture.registry.devices(ids: Array(stale.keys)).isEmpty
            }
            #expect(pruned, "every dead token reported during the outage was pruned\n\(cleanup.log.suffix(2000))")
            let dead = try await fixture.deadLetters(count: 1, timeout: .seconds(3))
            #expect(dead.isEmpty, "no job was dead-lettered: \(dead.map { $0.headers["x-pushd-reason"]?.stringValue ?? "x-death" })")
            #expect(worker.log.contains("consuming resumes"))
            #expect(worker.isRunning && cleanup.isRunning)
            #expect(!cleanup.log.contains("go back to the queue"), "the cleanup consumer held its events")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
            #expect(await cleanup.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
