import Foundation
import PushModel
import PushTestSupport
import Testing

/// A job whose content cannot fit any device once sealed is refused before any work: by
/// `pushd enqueue`, and by the worker (dead-lettered with the reason before the device
/// lookup) when a producer publishes it straight to the queue.
@Suite("Worker: a job that cannot fit is refused before any work", .serialized)
struct UnfittableJobTests {
    @Test("1.9 MB of content.data for 500 recipients: enqueue refuses it; published raw, it is dead-lettered unsealed and the next job is delivered")
    func refusedBeforeWork() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(5, mix: { _, _ in .normal })
            let real = Array(Set(devices.map(\.recipient))).sorted()
            let id = "\(fixture.prefix)-huge"
            var job = fixture.job(id: id, recipients: real + (0..<495).map { "\(fixture.prefix)-nobody-\($0)" }, title: "Secret")
            var content = try #require(job["content"] as? [String: Any])
            content["data"] = ["blob": String(repeating: "x", count: 1_900_000)]
            job["content"] = content
            let body = try JSONSerialization.data(withJSONObject: job)

            let file = fixture.directory.appendingPathComponent("huge.json")
            try body.write(to: file)
            let enqueue = try ChildProcess.run(BuildProducts.pushd, ["enqueue", "--file", file.path], environment: fixture.environment)
            #expect(enqueue.status != 0, "pushd enqueue accepted a job no device can receive")
            #expect(enqueue.errorText.contains("cannot fit any device"), "\(enqueue.errorText.prefix(500))")

            let worker = try fixture.startWorker()
            try await fixture.publishRaw([UInt8](body), messageID: id)
            let afterID = "\(fixture.prefix)-after"
            _ = try await fixture.publish(fixture.job(id: afterID, recipients: real, title: "Secret"))
            let dead = try await fixture.deadLetters(count: 1, timeout: .seconds(60))
            #expect(dead.count == 1)
            let reason = dead.first?.headers["x-pushd-reason"]?.stringValue ?? ""
            #expect(reason.contains("cannot fit any device"), "\(reason.prefix(300))")
            #expect(dead.first?.messageID == id)

            let delivered = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.received().count >= devices.count
            }
            #expect(delivered, "the next job was delivered")
            let received = try await fixture.received()
            #expect(received.allSatisfy { $0.collapseID == afterID }, "nothing of the refused job was sent")
            #expect(!worker.log.contains("PayloadTooLarge") && !worker.log.contains("payload too large"), "nothing was sealed and refused")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
