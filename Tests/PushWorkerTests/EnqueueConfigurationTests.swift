import Foundation
import PushTestSupport
import Testing

/// `pushd enqueue` reads the workers' configuration and declares nothing.
@Suite("pushd enqueue: one configuration with the workers", .serialized)
struct EnqueueConfigurationTests {
    @Test("enqueue publishes to <PUSHD_TOPOLOGY_PREFIX>.jobs, where the workers of that prefix consume; an unknown prefix is refused, not declared")
    func followsThePrefix() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(1, mix: { _, _ in .normal })
            let worker = try fixture.startWorker()
            let id = "\(fixture.prefix)-enqueued"
            let job = fixture.job(id: id, recipients: [devices[0].recipient], title: "Secret")
            let file = fixture.directory.appendingPathComponent("job.json")
            try JSONSerialization.data(withJSONObject: job).write(to: file)
            let enqueue = try ChildProcess.run(BuildProducts.pushd, ["enqueue", "--file", file.path], environment: fixture.environment)
            #expect(enqueue.status == 0, "\(enqueue.errorText)")
            let delivered = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.received().filter { $0.collapseID == id }.count == devices.count
            }
            #expect(delivered, "the workers of the prefix got the job")

            let unknown = "\(fixture.prefix)-nowhere"
            var environment = fixture.environment
            environment["PUSHD_TOPOLOGY_PREFIX"] = unknown
            let refused = try ChildProcess.run(BuildProducts.pushd, ["enqueue", "--file", file.path], environment: environment)
            #expect(refused.status != 0, "a job for a prefix nobody declared is refused")
            // Nothing was declared for it: publishing there again still fails the same way.
            let again = try ChildProcess.run(BuildProducts.pushd, ["enqueue", "--file", file.path], environment: environment)
            #expect(again.status != 0)
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
