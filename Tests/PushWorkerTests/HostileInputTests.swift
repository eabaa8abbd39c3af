import Foundation
import PushCrypto
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// Bad input and a misbehaving APNs/FCM: nothing crashes, nothing good is lost.
@Suite("Worker under hostile input and faults", .serialized)
struct HostileInputTests {
    /// Bodies no worker should accept: truncated, wrongly typed, oversized, hostile.
    static func hostileBodies(count: Int, template: [String: Any]) throws -> [[UInt8]] {
        let good = [UInt8](try JSONSerialization.data(withJSONObject: template))
        var generator = SystemRandomNumberGenerator()
        var bodies: [[UInt8]] = []
        for index in 0..<count {
            switch index % 10 {
            case 0: bodies.append(Array(good.prefix(Int.random(in: 1..<(good.count - 1), using: &generator))))  // truncated
            case 1: bodies.append(Array(#"{"version":1,"job_id":["not","a","string"]}"#.utf8))
            case 2: bodies.append(Array(String(repeating: "[", count: 100_000).utf8))  // nesting bomb
            case 3: bodies.append([0xFF, 0xFE, 0x00, 0x7B] + good)  // not UTF-8 / not JSON
            case 4:
                var job = template
                job["recipients"] = ["recipient_ids": (0...10_000).map { "r\($0)" }]  // over the limit
                bodies.append([UInt8](try JSONSerialization.data(withJSONObject: job)))
            case 5: bodies.append(Array(repeating: 0x20, count: 3 << 20))  // oversize
            case 6:
                var job = template
                job["job_id"] = "'; DROP TABLE devices; --"  // spaces: not a valid job id
                bodies.append([UInt8](try JSONSerialization.data(withJSONObject: job)))
            case 7:
                var job = template
                job["fallback"] = NSNull()
                bodies.append([UInt8](try JSONSerialization.data(withJSONObject: job)))
            case 8: bodies.append([])
            default:
                var job = template
                job["delivery"] = ["priority": "urgent"]
                bodies.append([UInt8](try JSONSerialization.data(withJSONObject: job)))
            }
        }
        return bodies
    }

    @Test("a thousand malformed, truncated, oversized or hostile jobs mixed with good ones: every bad one dead-lettered with its reason, every good one delivered")
    func hostileJobs() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(50, mix: { _, _ in .normal })
            let worker = try fixture.startWorker()
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            let bad = try Self.hostileBodies(count: 1000, template: fixture.job(id: "template", recipients: ["x"], title: "t"))
            var jobs: [String: NotificationJob] = [:]
            for (index, body) in bad.enumerated() {
                try await fixture.publishRaw(body)
                if index % 100 == 0 {
                    let id = "\(fixture.prefix)-good-\(index / 100)"
                    let slice = Array(recipients[(index / 100 * 5)..<(index / 100 * 5 + 5)])
                    jobs[id] = try await fixture.publish(fixture.job(id: id, recipients: slice, title: "Secret \(index)"))
                }
            }
            let expected = jobs.count * 5 * 4
            let delivered = try await waitUntil(timeout: .seconds(120), every: .milliseconds(250)) {
                try await fixture.received().count >= expected
            }
            let receivedCount = try await fixture.received().count
            #expect(delivered, "\(receivedCount) of \(expected) pushes delivered")
            let dead = try await fixture.deadLetters(count: bad.count, timeout: .seconds(90))
            #expect(dead.count == bad.count)
            for message in dead {
                let reason = message.headers["x-pushd-reason"]?.stringValue ?? ""
                #expect(reason.hasPrefix("malformed job:") || reason.hasPrefix("oversize job:"), "\(reason.prefix(200))")
            }
            #expect(worker.isRunning, "the worker survived")
            #expect(!worker.log.contains("Secret "))
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("the emulator failing 20% of requests with 429/500/503: everything is delivered in the end")
    func flakyServices() async throws {
        try await WorkerFixture.run(maxAttempts: 8, emulatorArguments: ["--fail-rate", "0.2", "--seed", "7"]) { fixture in
            let devices = try await fixture.registerRecipients(250, mix: { _, _ in .normal })
            let worker = try fixture.startWorker()
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            for part in 0..<2 {
                let slice = Array(recipients[(part * 125)..<((part + 1) * 125)])
                _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-flaky-\(part)", recipients: slice, title: "Secret"))
            }
            let tokens = Set(devices.map(\.token))
            let done = try await waitUntil(timeout: .seconds(120), every: .milliseconds(250)) {
                Set(try await fixture.received().map(\.token)) == tokens
            }
            let missing = tokens.subtracting(try await fixture.received().map(\.token)).count
            #expect(done, "\(missing) of \(tokens.count) devices never got their push")
            let stats = try await fixture.emulator.stats()
            let failures = (stats["total_requests"] as? Int ?? 0) - (stats["total_accepted"] as? Int ?? 0)
            #expect(failures > 50, "the emulator did inject failures (\(failures))")
            #expect(worker.log.contains("retry scheduled"))
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
