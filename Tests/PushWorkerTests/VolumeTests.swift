import Foundation
import PushModel
import PushQueue
import PushTestSupport
import Testing

/// High volume (issue 14): urgent and bulk lanes, large jobs split into chunks.
@Suite("Lanes and splitting end to end", .serialized)
struct VolumeTests {
    @Test("an urgent job published behind a bulk backlog is delivered before the backlog drains; the backlog is delivered in full")
    func urgentOvertakesBulk() async throws {
        try await WorkerFixture.run { fixture in
            let bulkDevices = try await fixture.registerRecipients(100, mix: { _, _ in .normal })
            let recipients = Array(Set(bulkDevices.map(\.recipient))).sorted()
            let urgentDevices = try await fixture.registerRecipients(1, first: 100, mix: { _, _ in .normal })
            // 40 bulk jobs of 100 recipients: 16,000 pushes waiting in the bulk lane.
            let bulkJobs = 40
            for number in 0..<bulkJobs {
                try await fixture.publish(
                    fixture.job(id: "\(fixture.prefix)-bulk-\(number)", recipients: recipients, title: "Campaign"), lane: .bulk)
            }
            let backlog = bulkJobs * bulkDevices.count
            let worker = try fixture.startWorker(environment: ["PUSHD_BULK_PREFETCH": "1"])
            let draining = try await waitUntil(timeout: .seconds(60), every: .milliseconds(50)) {
                try await fixture.acceptedCount() >= 400
            }
            #expect(draining, "the bulk backlog did not start draining; worker log:\n\(worker.log.suffix(2000))")

            let urgentID = "\(fixture.prefix)-chat"
            try await fixture.publish(fixture.job(id: urgentID, recipients: [urgentDevices[0].recipient], title: "Chat"), lane: .urgent)
            let log = PushLog(fixture)
            let urgentTokens = Set(urgentDevices.map(\.token))
            let urgentArrived = try await waitUntil(timeout: .seconds(60), every: .milliseconds(50)) {
                let pushes = try await log.refresh()
                return Set(pushes.filter { $0.collapseID == urgentID }.map(\.token)).isSuperset(of: urgentTokens)
            }
            // Bulk pushes the emulator had received when the last urgent one arrived, by its
            // clock: in the log's order a busy emulator process's records can come after the
            // other's later ones.
            let urgentAt = log.pushes.filter { $0.collapseID == urgentID }.compactMap(\.receivedAt).max() ?? .infinity
            let bulkWhenUrgentArrived = log.pushes.filter { $0.collapseID != urgentID && ($0.receivedAt ?? 0) < urgentAt }.count
            let bulkLoggedFirst = log.pushes.filter { $0.collapseID != urgentID }.count
            #expect(urgentArrived, "the urgent job was not delivered")
            #expect(bulkWhenUrgentArrived < backlog,
                    "the urgent job waited for the whole bulk backlog (\(bulkWhenUrgentArrived) of \(backlog); \(bulkLoggedFirst) logged before it)")

            let drained = try await waitUntil(timeout: .seconds(180), every: .milliseconds(500)) {
                try await fixture.acceptedCount() >= backlog + urgentTokens.count
            }
            let accepted = try await fixture.acceptedCount()
            #expect(drained, "bulk backlog not delivered: \(accepted) of \(backlog + urgentTokens.count)")
            let pushes = try await log.refresh()
            let perJob = Dictionary(grouping: pushes.filter { $0.collapseID != urgentID }, by: { $0.collapseID ?? "" })
            #expect(perJob.count == bulkJobs)
            for (job, received) in perJob {
                #expect(Set(received.map(\.token)) == Set(bulkDevices.map(\.token)), "bulk job \(job)")
            }
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a job over the chunk size is split into chunks that several workers deliver: every device once, with the original's collapse id")
    func splitJobReachesEveryDeviceOnce() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(95, mix: { _, _ in .normal })
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            let chunking = ["PUSHD_CHUNK_SIZE": "10"]
            let workers = [try fixture.startWorker("split-a", environment: chunking), try fixture.startWorker("split-b", environment: chunking)]
            let bothConsume = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.amqp.statistics(queue: fixture.topology.chunksQueue).consumers == 2
            }
            #expect(bothConsume)
            let jobID = "\(fixture.prefix)-campaign"
            try await fixture.publish(fixture.job(id: jobID, recipients: recipients, title: "Big"), lane: .urgent)
            let log = PushLog(fixture)
            let tokens = Set(devices.map(\.token))
            let all = try await waitUntil(timeout: .seconds(120), every: .milliseconds(250)) {
                Set(try await log.refresh().map(\.token)).isSuperset(of: tokens)
            }
            #expect(all, "\(tokens.subtracting(log.pushes.map(\.token)).count) devices got nothing")
            // Both workers drain (finishing what they hold) and nothing is left queued: then
            // every push that will ever be made has been made.
            for worker in workers { #expect(await worker.terminate(timeout: .seconds(30)) == 0) }
            #expect(try await fixture.readyJobs() == 0)
            let pushes = try await log.refresh()
            #expect(pushes.count == devices.count, "\(pushes.count) pushes for \(devices.count) devices")
            #expect(pushes.allSatisfy { $0.collapseID == jobID })
            let byToken = Dictionary(grouping: pushes, by: \.token)
            #expect(byToken.values.allSatisfy { $0.count == 1 })
            // One worker split the original; both delivered chunks (10 chunks, 4 at a time each).
            let splitters = workers.filter { $0.log.contains("job split") }
            #expect(splitters.count == 1, "the original is split once")
            for worker in workers { #expect(worker.log.contains("\"job_id\":\"\(jobID)#"), "a worker delivered no chunk") }
        }
    }

    @Test("workers killed with SIGKILL while splitting lose nothing and show nothing twice: every device gets every job, under its job's collapse id")
    func killedWhileSplitting() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(40, mix: { _, _ in .normal })
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            let chunking = ["PUSHD_CHUNK_SIZE": "4", "PUSHD_PREFETCH": "8"]
            // 30 jobs of 40 recipients, 10 chunks each: 300 chunk jobs, 4,800 pushes.
            let jobIDs = (0..<30).map { "\(fixture.prefix)-split-\($0)" }
            for id in jobIDs { try await fixture.publish(fixture.job(id: id, recipients: recipients, title: "Split"), lane: .urgent) }
            let first = try fixture.startWorker("killed", environment: chunking)
            // Killed as soon as the first chunks are in the chunks queue: some originals are
            // split and acked, some have chunks published but no ack, some are untouched.
            let splitting = try await waitUntil(timeout: .seconds(60), every: .milliseconds(2)) {
                try await fixture.amqp.statistics(queue: fixture.topology.chunksQueue).messages > 0
            }
            first.kill9()
            #expect(splitting, "no chunk was published; worker log:\n\(first.log.suffix(2000))")
            let second = try fixture.startWorker("survivor", environment: chunking)
            let expected = Set(devices.flatMap { device in jobIDs.map { "\(device.token) \($0)" } })
            let log = PushLog(fixture)
            let all = try await waitUntil(timeout: .seconds(180), every: .milliseconds(500)) {
                Set(try await log.refresh().map { "\($0.token) \($0.collapseID ?? "")" }).isSuperset(of: expected)
            }
            #expect(await second.terminate(timeout: .seconds(30)) == 0)
            #expect(try await fixture.readyJobs() == 0)
            let pushes = try await log.refresh()
            let visible = Set(pushes.map { "\($0.token) \($0.collapseID ?? "")" })
            #expect(all, "\(expected.subtracting(visible).count) of \(expected.count) (device, job) pairs lost")
            // What a phone shows is one notification per collapse id: any repeat (a chunk
            // published again by the re-split) carries its job's id and replaces the first.
            #expect(visible == expected, "\(visible.subtracting(expected).count) pushes under an unexpected collapse id")
            let repeats = pushes.count - visible.count
            print("killed while splitting: \(pushes.count) pushes, \(repeats) repeats replaced on the phone")
        }
    }

    @Test("a worker whose bulk lane disappears stops, with an error, instead of working one lane only")
    func laneLostStopsWorker() async throws {
        try await WorkerFixture.run { fixture in
            let worker = try fixture.startWorker()
            let consuming = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.amqp.statistics(queue: fixture.topology.bulkJobsQueue).consumers >= 1
            }
            #expect(consuming, "the worker never consumed the bulk lane; log:\n\(worker.log.suffix(2000))")
            try await fixture.amqp.deleteQueue(fixture.topology.bulkJobsQueue)
            let status = await worker.process.wait(timeout: .seconds(60))
            #expect(status != nil && status != 0, "exit status \(String(describing: status)); log:\n\(worker.log.suffix(2000))")
        }
    }
}
