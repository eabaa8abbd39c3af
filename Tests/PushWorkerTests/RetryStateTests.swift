import Foundation
import PushModel
import PushQueue
import PushTestSupport
import Testing

/// Producers cannot set retry state, and fan-out is bounded per recipient.
@Suite("Worker: retry state producers cannot forge, bounded fan-out", .serialized)
struct RetryStateTests {
    @Test("a producer's job carrying retry.device_ids of every device is dead-lettered as forged; nothing is sent to the listed devices")
    func forgedRetryState() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(5, mix: { _, _ in .normal })
            let worker = try fixture.startWorker()
            let id = "\(fixture.prefix)-forged"
            var job = fixture.job(id: id, recipients: ["\(fixture.prefix)-nobody"], title: "Secret")
            job["retry"] = [
                "attempt": 2, "first_attempt_at": RFC3339.string(from: Date()),
                "device_ids": devices.map(\.id) + (1...5000).map { Int64(1_000_000 + $0) },
            ] as [String: Any]
            let body = try JSONSerialization.data(withJSONObject: job)
            let file = fixture.directory.appendingPathComponent("forged.json")
            try body.write(to: file)
            let enqueue = try ChildProcess.run(BuildProducts.pushd, ["enqueue", "--file", file.path], environment: fixture.environment)
            #expect(enqueue.status != 0 && enqueue.errorText.contains("retry"), "pushd enqueue refuses retry state: \(enqueue.errorText)")
            // Published straight to the queue, as any producer could.
            try await fixture.publishRaw([UInt8](body), messageID: id)
            let dead = try await fixture.deadLetters(count: 1, timeout: .seconds(60))
            #expect(dead.count == 1)
            let reason = dead.first?.headers["x-pushd-reason"]?.stringValue ?? ""
            #expect(reason.hasPrefix("forged retry state"), "\(reason.prefix(200))")

            // The worker still takes real jobs, and retries (published by itself) still work:
            // a flaky token needs one.
            let afterID = "\(fixture.prefix)-after"
            _ = try await fixture.publish(fixture.job(id: afterID, recipients: [devices[0].recipient], title: "Secret"))
            let delivered = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.received().count >= 4
            }
            #expect(delivered)
            #expect(try await fixture.received().allSatisfy { $0.collapseID == afterID }, "nothing was sent for the forged job")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("retries reach workers through the retry exchange only: a flaky device is retried and delivered")
    func retriesThroughWorkerPath() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(2, mix: { index, _ in index == 0 ? .flaky : .normal })
            let worker = try fixture.startWorker()
            let id = "\(fixture.prefix)-retry"
            _ = try await fixture.publish(fixture.job(id: id, recipients: Array(Set(devices.map(\.recipient))), title: "Secret"))
            let tokens = Set(devices.map(\.token))
            let all = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                Set(try await fixture.received().map(\.token)) == tokens
            }
            #expect(all, "\(worker.log.suffix(2000))")
            #expect(worker.log.contains("retry scheduled"))
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("max_devices_per_recipient caps each recipient's devices to the most recently registered")
    func devicesPerRecipientCap() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(3, mix: { _, _ in .normal })
            let worker = try fixture.startWorker(environment: ["PUSHD_MAX_DEVICES_PER_RECIPIENT": "2"])
            let id = "\(fixture.prefix)-capped"
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            _ = try await fixture.publish(fixture.job(id: id, recipients: recipients, title: "Secret"))
            let done = await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                worker.log.contains("job processed")
            }
            #expect(done)
            let received = try await fixture.received()
            #expect(received.count == 6, "2 devices for each of 3 recipients, got \(received.count)")
            // The most recently registered: each recipient's last two (its Android devices).
            let newest = Set(Dictionary(grouping: devices, by: \.recipient).values.flatMap { $0.sorted { $0.id < $1.id }.suffix(2) }.map(\.token))
            #expect(Set(received.map(\.token)) == newest)
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
