import Foundation
import PushModel
import PushStore
import PushTestSupport
import Testing

/// The broker and the database restarted under a running cluster. These restart the shared
/// local servers, so they run on their own: `Deploy/test.sh` runs them in a second
/// `swift test` invocation after everything else (`PUSHD_FAULT_TESTS=1`), and the first
/// invocation leaves them out with `--skip FaultTests` rather than reporting them skipped.
@Suite("Faults: RabbitMQ and PostgreSQL restarted mid-run", .serialized,
       .enabled(if: ProcessInfo.processInfo.environment["PUSHD_FAULT_TESTS"] == "1"))
struct FaultTests {
    static let services = BuildProducts.repositoryRoot.appendingPathComponent("Deploy/local/services.sh").path

    /// Publishes 20 jobs for 2,000 devices, restarts `what` once a third have been
    /// delivered, and checks that every device gets its push (at least once; a repeat only
    /// after a redelivery, with the same collapse id, so the phone shows it once).
    func survives(restart what: String) async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(500, mix: { _, _ in .normal })
            let worker = try fixture.startWorker()
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            let jobOfRecipient = try await fixture.publishJobs(for: recipients, perJob: 25, label: what)
            #expect(try await fixture.waitForAccepted(devices.count / 3, timeout: .seconds(60)), "deliveries started")
            let restarted = try ChildProcess.run("/bin/bash", [Self.services, what])
            #expect(restarted.status == 0, "\(what): \(restarted.errorText)")

            let tokens = Set(devices.map(\.token))
            let all = try await waitUntil(timeout: .seconds(180), every: .milliseconds(250)) {
                Set(try await fixture.received().map(\.token)).isSuperset(of: tokens)
            }
            let received = try await fixture.received()
            let missing = tokens.subtracting(received.map(\.token))
            #expect(all, "\(missing.count) devices never got their push after the \(what)\n\(worker.log.suffix(3000))")
            let byToken = Dictionary(grouping: received, by: \.token)
            for device in devices {
                for push in byToken[device.token] ?? [] {
                    #expect(push.collapseID == jobOfRecipient[device.recipient], "a repeat keeps its job's collapse id")
                }
            }
            // The worker recovered by itself: it consumes the jobs queue again and has left
            // nothing in it. Waiting for this also lets the broker finish recovering the test's
            // queues before the fixture deletes them: RabbitMQ 3.10 loses the supervisor of its
            // dead-letter workers (rabbit_fifo_dlx_sup, "reached_max_restart_intensity") when
            // at-least-once quorum queues are deleted while their workers are still starting
            // after a restart, and every such queue declared afterwards (the next test's) then
            // crashes on electing a leader, so publishes to it are nacked.
            let consuming = await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                // The fixture's own connection may still be reconnecting: that is "not yet".
                guard let jobs = try? await fixture.amqp.statistics(queue: fixture.topology.jobsQueue) else { return false }
                return jobs.consumers > 0 && jobs.messages == 0
            }
            #expect(consuming, "the worker consumes the jobs queue again after the \(what)\n\(worker.log.suffix(2000))")
            #expect(worker.isRunning, "the worker recovered by itself")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("RabbitMQ restarted in the middle of 2,000 deliveries: nothing lost")
    func brokerRestart() async throws {
        try await survives(restart: "rabbitmq-restart-app")
    }

    @Test("PostgreSQL restarted in the middle of 2,000 deliveries: nothing lost, the worker recovers by itself")
    func databaseRestart() async throws {
        try await survives(restart: "pg-restart")
    }
}
