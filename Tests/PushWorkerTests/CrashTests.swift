import Foundation
import PushStore
import PushTestSupport
import Testing

/// Workers killed or stopped in the middle of a batch.
@Suite("Worker killed or stopped mid-batch", .serialized)
struct CrashTests {
    /// 20 jobs of 25 recipients (100 devices each); returns the job of each recipient.
    static func publishBatch(_ fixture: WorkerFixture, devices: [WorkerFixture.TestDevice], label: String) async throws -> [String: String] {
        let recipients = Array(Set(devices.map(\.recipient))).sorted()
        var jobOfRecipient: [String: String] = [:]
        for part in 0..<20 {
            let slice = Array(recipients[(part * 25)..<((part + 1) * 25)])
            let id = "\(fixture.prefix)-\(label)-\(part)"
            _ = try await fixture.publish(fixture.job(id: id, recipients: slice, title: "Secret"))
            for recipient in slice { jobOfRecipient[recipient] = id }
        }
        return jobOfRecipient
    }

    static func accepted(_ fixture: WorkerFixture) async throws -> Int {
        try await fixture.emulator.stats()["total_accepted"] as? Int ?? 0
    }

    @Test("a worker killed with SIGKILL in the middle of a batch loses nothing: another delivers the rest, repeats keep their collapse id")
    func sigkill() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(500, mix: { _, _ in .normal })
            let first = try fixture.startWorker("first")
            let jobOfRecipient = try await Self.publishBatch(fixture, devices: devices, label: "kill")
            let started = try await waitUntil(timeout: .seconds(60), every: .milliseconds(20)) {
                try await Self.accepted(fixture) >= 300
            }
            #expect(started)
            first.kill9()
            let deliveredBeforeKill = try await Self.accepted(fixture)
            #expect(deliveredBeforeKill < devices.count, "killed mid-batch (\(deliveredBeforeKill) of \(devices.count) delivered)")
            let second = try fixture.startWorker("second")
            let tokens = Set(devices.map(\.token))
            let all = try await waitUntil(timeout: .seconds(120), every: .milliseconds(250)) {
                Set(try await fixture.received().map(\.token)).isSuperset(of: tokens)
            }
            let received = try await fixture.received()
            #expect(all, "\(tokens.subtracting(received.map(\.token)).count) devices lost")
            let byToken = Dictionary(grouping: received, by: \.token)
            for device in devices {
                for push in byToken[device.token] ?? [] {
                    #expect(push.collapseID == jobOfRecipient[device.recipient])
                }
            }
            #expect(await second.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a worker stopped with SIGTERM drains cleanly: exits 0, finishes what it took, leaves the rest to the queue")
    func sigterm() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(500, mix: { _, _ in .normal })
            let first = try fixture.startWorker("draining")
            _ = try await Self.publishBatch(fixture, devices: devices, label: "term")
            let started = try await waitUntil(timeout: .seconds(60), every: .milliseconds(20)) {
                try await Self.accepted(fixture) >= 200
            }
            #expect(started)
            let status = await first.terminate(timeout: .seconds(30))
            #expect(status == 0, "exit status \(String(describing: status))")
            #expect(first.log.contains("worker drained"))
            // Every job it took was finished before it acked: no job it acked is missing a push.
            let afterDrain = try await fixture.received()
            let byJob = Dictionary(grouping: afterDrain, by: { $0.collapseID ?? "" })
            for (job, pushes) in byJob where !job.isEmpty {
                #expect(Set(pushes.map(\.token)).count == 100, "job \(job) was drained half-done (\(pushes.count) of 100)")
            }
            let second = try fixture.startWorker("second")
            let tokens = Set(devices.map(\.token))
            let all = try await waitUntil(timeout: .seconds(120), every: .milliseconds(250)) {
                Set(try await fixture.received().map(\.token)).isSuperset(of: tokens)
            }
            #expect(all)
            #expect(await second.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
