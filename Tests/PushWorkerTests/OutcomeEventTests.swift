import Foundation
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// `job.completed` (issue 14): opt-in per job, once per job, after every device settled,
/// with counts per platform and outcome and the permanently failed devices.
@Suite("Outcome events end to end", .serialized)
struct OutcomeEventTests {
    /// A device registered with a token the emulator answers in a known way.
    struct Planned {
        let recipient: String
        let platform: Platform
        let tokenPrefix: String
        let outcome: JobCompletedEvent.Outcome
    }

    /// Per recipient: what each of its devices ends as. Flaky tokens fail twice, then are
    /// delivered by the third attempt; 5030/unavailable- fail every time (the fixture allows
    /// 4 attempts); 410a/unregistered- are dead tokens.
    static func plan(_ prefix: String) -> [Planned] {
        [
            Planned(recipient: "\(prefix)-a", platform: .ios, tokenPrefix: "c0de", outcome: .delivered),
            Planned(recipient: "\(prefix)-a", platform: .ios, tokenPrefix: "fa11", outcome: .delivered),
            Planned(recipient: "\(prefix)-a", platform: .android, tokenPrefix: "fcm-", outcome: .delivered),
            Planned(recipient: "\(prefix)-a", platform: .android, tokenPrefix: "flaky-", outcome: .delivered),
            Planned(recipient: "\(prefix)-b", platform: .ios, tokenPrefix: "5030", outcome: .retriesExhausted),
            Planned(recipient: "\(prefix)-b", platform: .android, tokenPrefix: "unavailable-", outcome: .retriesExhausted),
            Planned(recipient: "\(prefix)-c", platform: .ios, tokenPrefix: "410a", outcome: .invalid),
            Planned(recipient: "\(prefix)-c", platform: .android, tokenPrefix: "unregistered-", outcome: .invalid),
            Planned(recipient: "\(prefix)-d", platform: .ios, tokenPrefix: "c0de", outcome: .delivered),
            Planned(recipient: "\(prefix)-d", platform: .android, tokenPrefix: "fcm-", outcome: .delivered),
        ]
    }

    static func register(_ plan: [Planned], _ fixture: WorkerFixture) async throws -> [(Planned, Int64)] {
        var registered: [(Planned, Int64)] = []
        for (index, device) in plan.enumerated() {
            let unique = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let token = device.platform == .ios
                ? String((device.tokenPrefix + unique + String(repeating: "0", count: 64)).prefix(64)) : device.tokenPrefix + unique
            let outcome = try await fixture.registry.register(DeviceRegistration(
                recipientID: device.recipient, platform: device.platform,
                appID: device.platform == .ios ? fixture.bundleID : EmulatorProcess.projectID,
                environment: device.platform == .ios ? .production : nil, token: token,
                publicKey: fixture.publicKeys[index % fixture.publicKeys.count]))
            registered.append((device, outcome.deviceID))
        }
        return registered
    }

    @Test("job.completed arrives once per job that asked for it, split or not, after retries, with exact counts and failed device ids, without tokens or content")
    func completedOnce() async throws {
        try await WorkerFixture.run(maxAttempts: 4) { fixture in
            let plan = Self.plan(fixture.prefix)
            let registered = try await Self.register(plan, fixture)
            let queue = try await fixture.subscribe(toEvents: JobCompletedEvent.name)
            let recipients = Array(Set(plan.map(\.recipient))).sorted()
            let chunking = ["PUSHD_CHUNK_SIZE": "2"]
            let workers = [try fixture.startWorker("report-a", environment: chunking), try fixture.startWorker("report-b", environment: chunking)]

            // Whole (4 recipients, split into 2 chunks of 2), single (2 recipients, not split),
            // and silent (no report asked).
            var whole = fixture.job(id: "\(fixture.prefix)-whole", recipients: recipients, title: "Report me")
            whole["report"] = ["completed_event": true]
            var single = fixture.job(id: "\(fixture.prefix)-single", recipients: Array(recipients.prefix(2)), title: "Report me too")
            single["report"] = ["completed_event": true]
            let silent = fixture.job(id: "\(fixture.prefix)-silent", recipients: recipients, title: "Quiet")
            for job in [whole, single, silent] { try await fixture.publish(job, lane: .urgent) }

            let messages = try await fixture.collect(from: queue, count: 2, timeout: .seconds(90))
            #expect(messages.count == 2, "events: \(messages.count); worker log:\n\(workers[0].log.suffix(3000))")
            // The silent job's retries settle too, then the workers drain: nothing more may come.
            let settled = try await waitUntil(timeout: .seconds(60), every: .milliseconds(250)) {
                var ready = try await fixture.readyJobs()
                for tier in fixture.topology.retryTiers { ready += try await fixture.amqp.statistics(queue: fixture.topology.retryQueue(tier)).messages }
                return ready == 0
            }
            #expect(settled)
            for worker in workers { #expect(await worker.terminate(timeout: .seconds(30)) == 0) }
            #expect(try await fixture.amqp.statistics(queue: queue).messages == 0, "a second job.completed was published")

            let expected: [(id: String, recipients: Set<String>, chunks: Int)] = [
                (whole["job_id"] as? String ?? "", Set(recipients), 2),
                (single["job_id"] as? String ?? "", Set(recipients.prefix(2)), 1),
            ]
            #expect(Set(messages.compactMap(\.messageID)) == Set(expected.map(\.id)))
            for message in messages {
                let text = String(decoding: message.body, as: UTF8.self)
                let event = try JSONDecoder().decode(JobCompletedEvent.self, from: Data(message.body))
                #expect(message.messageID == event.jobID, "the message id is the de-duplication key")
                let want = try #require(expected.first { $0.id == event.jobID })
                let devices = registered.filter { want.recipients.contains($0.0.recipient) }
                #expect(event.chunks == want.chunks)
                for platform in Platform.allCases {
                    for outcome in JobCompletedEvent.Outcome.allCases {
                        let count = devices.filter { $0.0.platform == platform && $0.0.outcome == outcome }.count
                        #expect(event.counts[platform]?[outcome] == count, "\(event.jobID) \(platform) \(outcome)")
                    }
                }
                #expect(event.failedDeviceIDs == devices.filter { $0.0.outcome != .delivered }.map(\.1).sorted())
                #expect(!event.failedDeviceIDsTruncated)
                #expect(!text.contains("Report me") && !text.contains("private message") && !text.contains("c0de"))
            }
        }
    }
}

extension OutcomeEventTests {
    @Test("a worker killed with SIGKILL mid-batch: every reporting job still gets job.completed, any repeat has the same message id and counts")
    func completedAfterCrash() async throws {
        try await WorkerFixture.run(maxAttempts: 4) { fixture in
            // One device in eight has a dead token (invalid), one in eight fails twice first.
            let devices = try await fixture.registerRecipients(40, mix: { index, _ in
                switch index % 8 {
                case 0: .pruned
                case 3: .flaky
                default: .normal
                }
            })
            let queue = try await fixture.subscribe(toEvents: JobCompletedEvent.name)
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            let chunking = ["PUSHD_CHUNK_SIZE": "3"]
            // 20 jobs of 10 recipients (40 devices, 4 chunks each).
            var jobRecipients: [String: Set<String>] = [:]
            for number in 0..<20 {
                let slice = (0..<10).map { recipients[(number * 10 + $0) % recipients.count] }
                var job = fixture.job(id: "\(fixture.prefix)-crash-\(number)", recipients: slice, title: "Crash")
                job["report"] = ["completed_event": true]
                try await fixture.publish(job, lane: .urgent)
                jobRecipients[job["job_id"] as? String ?? ""] = Set(slice)
            }
            let first = try fixture.startWorker("killed", environment: chunking)
            let started = try await waitUntil(timeout: .seconds(60), every: .milliseconds(20)) {
                try await fixture.acceptedCount() >= 100
            }
            first.kill9()
            #expect(started, "nothing delivered before the kill; worker log:\n\(first.log.suffix(2000))")
            let second = try fixture.startWorker("survivor", environment: chunking)

            var messages = try await fixture.collect(from: queue, count: jobRecipients.count, timeout: .seconds(120))
            let settled = try await waitUntil(timeout: .seconds(60), every: .milliseconds(250)) {
                var ready = try await fixture.readyJobs()
                for tier in fixture.topology.retryTiers { ready += try await fixture.amqp.statistics(queue: fixture.topology.retryQueue(tier)).messages }
                return ready == 0
            }
            #expect(settled)
            #expect(await second.terminate(timeout: .seconds(30)) == 0)
            // Repeats (a crash between the confirm and the tally's mark) are still in the queue.
            let extra = try await fixture.amqp.statistics(queue: queue).messages
            if extra > 0 { messages += try await fixture.collect(from: queue, count: extra, timeout: .seconds(10)) }

            let byJob = Dictionary(grouping: messages, by: { $0.messageID ?? "" })
            #expect(Set(byJob.keys) == Set(jobRecipients.keys), "jobs without an event: \(Set(jobRecipients.keys).subtracting(byJob.keys).count)")
            for (jobID, copies) in byJob {
                let events = try copies.map { try JSONDecoder().decode(JobCompletedEvent.self, from: Data($0.body)) }
                let wanted = devices.filter { jobRecipients[jobID]?.contains($0.recipient) == true }
                let invalid = wanted.filter { $0.kind == .pruned }
                for event in events {
                    #expect(event.jobID == jobID && event.chunks == 4)
                    #expect(event.devices == wanted.count, "\(jobID): \(event.devices) devices counted, \(wanted.count) expected")
                    let delivered = event.counts.values.reduce(0) { $0 + ($1[.delivered] ?? 0) }
                    #expect(delivered == wanted.count - invalid.count, "\(jobID) delivered")
                    #expect(event.failedDeviceIDs == invalid.map(\.id).sorted(), "\(jobID) failed ids")
                    #expect(event.counts == events[0].counts, "\(jobID): repeats carry the same counts")
                }
            }
            print("job.completed after a crash: \(messages.count) messages for \(byJob.count) jobs")
        }
    }
}
