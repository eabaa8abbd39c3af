import Foundation
import PushCommandLine
import PushModel
import PushQueue

/// `pushd bench pipeline --mode urgent-under-bulk`: what lanes are for. Urgent jobs (one
/// recipient, two pushes each) are published one at a time, first on an idle cluster, then
/// while two workers drain a bulk backlog; the figure is the p99 of publish → accepted by the
/// emulator of the urgent pushes, beside how much of the backlog was still waiting.
extension PipelineRun {
    struct UrgentLatency {
        let p50: Double
        let p99: Double
        /// Bulk deliveries not yet accepted when the last urgent push was.
        let bulkPending: Int
    }

    /// Publishes `backlog` deliveries of bulk jobs while no worker runs, starts two workers,
    /// waits until the backlog drains, then publishes `urgentJobs` urgent jobs `spacing`
    /// apart and measures them. With `backlog` 0 this is the idle measurement. The rest of
    /// the backlog is purged afterwards, so the figures do not wait for it.
    func urgentLatency(backlog: Int, urgentJobs: Int, spacing: Duration = .milliseconds(20)) async throws -> UrgentLatency {
        try await resetEmulator()
        if backlog > 0 { try await publishJobs(deliveries: backlog, lane: .bulk) }
        let bulkDeliveries = backlog > 0 ? max(1, backlog / (Self.recipientsPerJob * 2)) * Self.recipientsPerJob * 2 : 0
        let workers = try startWorkers(2)
        defer { stop(workers) }
        // Idle: wait for the workers to consume (they declare nothing we could watch sooner).
        // Under bulk: wait until the backlog is visibly draining.
        try await waitForAccepted(backlog > 0 ? min(bulkDeliveries, 1000) : 0)
        if backlog == 0 { try await Task.sleep(for: .seconds(1)) }

        var published: [String: Double] = [:]
        for _ in 0..<urgentJobs {
            let (id, request) = urgentJob()
            published[id] = Date().timeIntervalSince1970
            try await amqp.publish(request)
            try await Task.sleep(for: spacing)
        }
        let urgentDeliveries = published.count * 2
        // Wait for the urgent pushes only: stop as soon as all of them arrived.
        var urgentArrivals: [Double] = []
        var lastUrgentAt = 0.0
        var bulkArrivals: [Double] = []
        var cursor = 0
        let deadline = ContinuousClock.now + .seconds(300)
        while urgentArrivals.count < urgentDeliveries {
            for arrival in try await arrivals(after: &cursor) {
                guard let sent = published[arrival.jobID] else {
                    bulkArrivals.append(arrival.at)
                    continue
                }
                urgentArrivals.append((arrival.at - sent) * 1000)
                lastUrgentAt = max(lastUrgentAt, arrival.at)
            }
            guard ContinuousClock.now < deadline else {
                throw BenchmarkError("only \(urgentArrivals.count) of \(urgentDeliveries) urgent pushes accepted")
            }
            if urgentArrivals.count < urgentDeliveries { try await Task.sleep(for: .milliseconds(200)) }
        }
        let bulkAccepted = bulkArrivals.filter { $0 <= lastUrgentAt }.count
        if backlog > 0 { try await amqp.purge(queue: topology.bulkJobsQueue) }
        let sorted = urgentArrivals.sorted()
        return UrgentLatency(
            p50: sorted[sorted.count / 2], p99: sorted[min(sorted.count - 1, sorted.count * 99 / 100)],
            bulkPending: max(0, bulkDeliveries - bulkAccepted))
    }

    /// One urgent job to one recipient (an iOS and an Android push).
    func urgentJob() -> (String, PublishRequest) {
        let (id, request) = job(recipients: 1, lane: .urgent, label: "urgent")
        return (id, request)
    }
}

extension PipelineBenchmark {
    /// Prints the urgent-under-bulk figures.
    static func urgentUnderBulk(_ bench: PipelineRun, backlog: Int, urgentJobs: Int) async throws {
        let idle = try await bench.urgentLatency(backlog: 0, urgentJobs: urgentJobs)
        StandardStreams.write(line: String(format: "  urgent jobs, idle cluster        : p50 %.1f ms, p99 %.1f ms (%d jobs, 2 pushes each)", idle.p50, idle.p99, urgentJobs))
        let loaded = try await bench.urgentLatency(backlog: backlog, urgentJobs: urgentJobs)
        StandardStreams.write(line: String(format: "  urgent jobs, %d-delivery bulk backlog draining: p50 %.1f ms, p99 %.1f ms; %d bulk deliveries still queued when the last urgent push was accepted", backlog, loaded.p50, loaded.p99, loaded.bulkPending))
    }
}
