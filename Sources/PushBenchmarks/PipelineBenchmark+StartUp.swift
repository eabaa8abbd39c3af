import Foundation
import PushCommandLine

extension PipelineRun {
    /// What a worker costs once, whatever it drains afterwards: its CPU from exec until it
    /// consumes every queue and has gone quiet (no job yet), and what its first job adds on
    /// top of that job's own deliveries' share (the PostgreSQL session with its SCRAM
    /// exchange, the HTTP/2 connections' TLS handshakes, the first provider and OAuth tokens).
    ///
    /// Every throughput row counts a worker's whole life, so this is part of each row's CPU
    /// per delivery: spread over the row's deliveries per worker (`perDelivery`).
    struct StartUpFigures {
        /// CPU milliseconds until consuming and quiet.
        var idleMilliseconds: Double
        /// CPU milliseconds of the first job beyond `deliveries` × the steady per-delivery
        /// cost the caller passes in.
        var firstJobMilliseconds: Double

        var totalMilliseconds: Double { idleMilliseconds + firstJobMilliseconds }

        /// The start-up's share of a drain's CPU per delivery, in µs, with `deliveriesPerWorker`.
        func perDelivery(deliveriesPerWorker: Int) -> Double {
            totalMilliseconds * 1000 / Double(max(deliveriesPerWorker, 1))
        }
    }

    /// One worker, started on the run's empty queues; `steadyMicroseconds` is the CPU per
    /// delivery of a drain, taken off the first job's cost. That drain's figure holds its own
    /// start-up's share too (about 1.5 µs in a 20,000-delivery one-worker drain, 0.3 µs in
    /// the 100,000-delivery backlog), so the first job's extra reads that much × its
    /// deliveries low. A drain may also open more than one job does (a second database
    /// connection when lookups queue, a second HTTP/2 connection per host), so this is the
    /// least a worker spends once.
    func startUp(steadyMicroseconds: Double) async throws -> StartUpFigures {
        try await resetEmulator()
        let workers = try startWorkers(1)
        defer { stop(workers) }
        try await waitForConsumer(on: topology.chunksQueue)
        let idle = try await quietUsage(of: workers)
        let (_, request) = job(label: "start-up")
        try await amqp.publish(request)
        try await waitForAccepted(deliveriesPerJob)
        // Quiet again: the acknowledgements, the job's tally and its events come after the
        // last push.
        let after = try await quietUsage(of: workers)
        return StartUpFigures(
            idleMilliseconds: idle * 1000,
            firstJobMilliseconds: max(0, (after - idle) * 1000 - Double(deliveriesPerJob) * steadyMicroseconds / 1000))
    }

    /// Until `queue` has a consumer: the worker subscribes to its queues one after another,
    /// the chunks queue last (`WorkerService`).
    private func waitForConsumer(on queue: String, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await amqp.statistics(queue: queue).consumers == 0 {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("no worker consumed \(queue) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The workers' CPU seconds once two readings 100 ms apart differ by less than 0.1 ms:
    /// the publishing connection may still be declaring the topology when the consumer is
    /// seen, a job's bookkeeping goes on after its last push, and an idle worker's timers
    /// cost far less than that.
    private func quietUsage(of workers: [Process], timeout: Duration = .seconds(30)) async throws -> Double {
        let deadline = ContinuousClock.now + timeout
        var last = try usage(of: workers).cpuSeconds
        while true {
            try await Task.sleep(for: .milliseconds(100))
            let now = try usage(of: workers).cpuSeconds
            if now - last < 1e-4 { return now }
            guard ContinuousClock.now < deadline else { throw BenchmarkError("the worker did not go quiet within \(timeout)") }
            last = now
        }
    }
}

extension PipelineBenchmark {
    static let startUpRounds = 3

    /// `startUpRounds` one-worker start-ups, each written as it ends; the median of each
    /// part is returned.
    static func startUpRuns(_ bench: PipelineRun, steadyMicroseconds: Double) async throws -> PipelineRun.StartUpFigures {
        var runs: [PipelineRun.StartUpFigures] = []
        for _ in 0..<startUpRounds {
            let run = try await bench.startUp(steadyMicroseconds: steadyMicroseconds)
            StandardStreams.write(line: String(
                format: "  start-up: %.1f ms of CPU until the worker consumed and went quiet (no job yet), %.1f ms more for its first job"
                    + " beyond that job's %d deliveries at %.1f µs", run.idleMilliseconds, run.firstJobMilliseconds,
                bench.deliveriesPerJob, steadyMicroseconds))
            runs.append(run)
        }
        return PipelineRun.StartUpFigures(
            idleMilliseconds: median(runs.map(\.idleMilliseconds)), firstJobMilliseconds: median(runs.map(\.firstJobMilliseconds)))
    }

    /// What the start-up is of the two-worker row's CPU per delivery: each worker starts
    /// once and drains about half of `deliveries`. Shown, not taken off: the rows count
    /// whole lives, as the measure did.
    static func writeStartUpShare(_ startUp: PipelineRun.StartUpFigures, deliveries: Int, twoWorkers: Row.Drain) {
        let share = startUp.perDelivery(deliveriesPerWorker: deliveries / 2)
        let cpu = twoWorkers.figures.cpuMicrosecondsPerDelivery
        StandardStreams.write(line: String(
            format: "  start-up (median of %d): %.1f ms per worker, %.1f µs of the 2-worker row's %.1f µs per delivery"
                + " (%d deliveries each); the rest, %.1f µs, is %.2f× the envelope around that drain (not a target figure)",
            startUpRounds, startUp.totalMilliseconds, share, cpu, deliveries / 2, cpu - share, (cpu - share) / twoWorkers.envelope))
    }
}
