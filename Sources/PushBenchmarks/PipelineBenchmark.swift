import Foundation
import PushCommandLine
import PushCrypto
import PushDelivery
import PushQueue
import PushStore
import PushProducer

/// `pushd bench pipeline`: end to end on this machine. Jobs already queued → pushes accepted
/// by the emulator, with one worker and with two; publish-to-acceptance latency at half the
/// maximum rate; a worker's peak memory with a 100,000-delivery backlog; the ceilings (the
/// emulator's h2load rate, the crypto limit) with our rate as a ratio of the lower; the
/// workers' CPU per delivery beside the CPU of one envelope; and a peer sender (aioapns).
enum PipelineBenchmark {
    struct Setup {
        let emulatorURL: String
        let adminURL: String
        let caFile: String
        let credentials: URL
        let databaseURL: String
        let amqpURL: String
    }

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(
            arguments,
            options: [
                "emulator-url", "emulator-admin", "ca-file", "credentials", "deliveries", "backlog", "mode", "urgent-jobs",
                "peer-python", "peer-script", "peer-requests", "only", "baseline", "rounds", "rate", "recipients", "platforms", "workers",
                "row-drains",
            ])
        let environment = ProcessInfo.processInfo.environment
        guard let databaseURL = environment["PUSHD_DATABASE_URL"], let amqpURL = environment["PUSHD_AMQP_URL"] else {
            throw .usage("set PUSHD_DATABASE_URL and PUSHD_AMQP_URL (bash Deploy/bench.sh pipeline does)")
        }
        let setup = Setup(
            emulatorURL: try parsed.required("emulator-url"), adminURL: try parsed.required("emulator-admin"),
            caFile: try parsed.required("ca-file"), credentials: URL(fileURLWithPath: try parsed.required("credentials")),
            databaseURL: databaseURL, amqpURL: amqpURL)
        let deliveries = try parsed.integer("deliveries", default: 20_000)
        let backlog = try parsed.integer("backlog", default: 100_000)
        let peerRequests = try parsed.integer("peer-requests", default: 20_000)
        let workers = try parsed.integer("workers", default: 1)
        let rowDrains = try parsed.integer("row-drains", default: 3, minimum: 1)
        guard parsed["workers"] == nil || parsed["only"] == "backlog" else {
            throw .usage("--workers: only with --only backlog")
        }
        let iosOnly: Bool
        switch parsed["platforms"] {
        case nil, "both": iosOnly = false
        case "ios" where parsed["mode"] == nil: iosOnly = true
        default: throw .usage("--platforms: both (the default: an iOS and an Android device per recipient) or ios (not with --mode)")
        }
        let bench: PipelineRun
        do { bench = try await PipelineRun(setup: setup) } catch { throw .failure("set-up failed: \(error)") }
        bench.iosOnly = iosOnly
        if let mode = parsed["mode"] {
            guard mode == "urgent-under-bulk" else { throw .usage("--mode: only urgent-under-bulk (or none for the full run)") }
            let urgentJobs = try parsed.integer("urgent-jobs", default: 200)
            do {
                StandardStreams.write(line: "bench pipeline urgent-under-bulk: two workers, default prefetch; devices registered in \(bench.prefix)")
                try await urgentUnderBulk(bench, backlog: backlog, urgentJobs: urgentJobs)
            } catch {
                await bench.tearDown(keepingWorkerLogs: true)
                throw .failure("\(error)")
            }
            await bench.tearDown()
            return
        }
        do {
            StandardStreams.write(line: "bench pipeline: all on loopback, \(ProcessInfo.processInfo.activeProcessorCount) cores; devices registered in \(bench.prefix)")
            if parsed["only"] == "latency" {
                // The latency run alone, at --rate deliveries/s (default: half of what two
                // workers drain), with jobs of --recipients recipients (default 50).
                let rate = try parsed["rate"] == nil
                    ? await bench.throughput(deliveries: deliveries, workers: 2).rate / 2 : parsed.double("rate", default: 0)
                let recipients = try parsed.integer("recipients", default: PipelineRun.recipientsPerJob)
                writeLatency(
                    try await bench.latency(rate: rate, seconds: 10, recipients: recipients),
                    note: (parsed["rate"] == nil ? "half the maximum" : "--rate") + ", \(recipients * bench.devicesPerRecipient)-push jobs",
                    isTarget: parsed["rate"] == nil && recipients == PipelineRun.recipientsPerJob)
                await bench.tearDown()
                return
            }
            if parsed["only"] == "start-up" {
                // A worker's one-off cost alone, against a one-worker drain's CPU per delivery.
                let steady = try await bench.throughput(deliveries: deliveries, workers: 1)
                write("1 worker ", steady, note: "\(deliveries) deliveries, for the steady cost per delivery")
                _ = try await startUpRuns(bench, steadyMicroseconds: steady.cpuMicrosecondsPerDelivery)
                await bench.tearDown()
                return
            }
            if parsed["only"] == "backlog" {
                // A quick look at one figure while profiling: the backlog drain alone, or
                // drains alternating with a baseline binary's worker; `--workers N` drains it
                // with N workers (1 by default), as the two-worker throughput run does.
                let rounds = try parsed.integer("rounds", default: 1)
                if let baseline = parsed["baseline"] {
                    guard FileManager.default.isExecutableFile(atPath: baseline) else {
                        throw BenchmarkError("--baseline \(baseline): not an executable pushd")
                    }
                    try await compare(bench, baseline: URL(fileURLWithPath: baseline), rounds: rounds, backlog: backlog, workers: workers)
                } else {
                    var drains: [DrainFigures] = []
                    for _ in 0..<max(1, rounds) {
                        let drained = try await bench.throughput(deliveries: backlog, workers: workers)
                        write("backlog  ", drained, note: "\(workers) worker\(workers == 1 ? "" : "s"), \(backlog)-delivery backlog")
                        drains.append(drained)
                    }
                    let envelope = bench.cryptoMicrosecondsPerEnvelope()
                    let cpu = median(drains.map(\.cpuMicrosecondsPerDelivery))
                    StandardStreams.write(line: String(
                        format: "  CPU per delivery (median of %d) / crypto per envelope: %.1f / %.1f = %.2f", drains.count, cpu,
                        envelope, cpu / envelope))
                }
                await bench.tearDown()
                return
            }
            let oneWorker = try await row("1 worker ", note: "\(deliveries) deliveries, queued before start", count: rowDrains, bench: bench) {
                try await bench.throughput(deliveries: deliveries, workers: 1)
            }
            let twoWorkers = try await row("2 workers", note: "CPU of both", count: rowDrains, bench: bench) {
                try await bench.throughput(deliveries: deliveries, workers: 2)
            }
            let best = max(oneWorker.median.figures.rate, twoWorkers.median.figures.rate)
            writeLatency(try await bench.latency(rate: best / 2, seconds: 10), note: "half the maximum")
            // What one user's notification waits, apart from a large job's own spread: jobs of
            // one recipient (two pushes, one with --platforms ios), 100 a second.
            writeLatency(
                try await bench.latency(rate: Double(100 * bench.devicesPerRecipient), seconds: 10, recipients: 1),
                note: "one-recipient jobs, 100 a second", isTarget: false)
            let drained = try await row("backlog  ", note: "1 worker, \(backlog)-delivery backlog", count: rowDrains, bench: bench) {
                try await bench.peakMemory(backlog: backlog)
            }
            StandardStreams.write(line: String(
                format: "  worker peak memory (VmHWM) with a %d-delivery backlog: %.1f MiB (target <= 64", backlog, drained.peakMiB)
                + (rowDrains == 1 ? ")" : "; the highest of \(rowDrains) drains)"))
            // Counted in every row (each worker's whole life): what a worker spends once.
            let startUp = try await startUpRuns(bench, steadyMicroseconds: drained.median.figures.cpuMicrosecondsPerDelivery)
            let ceiling = try await bench.h2loadCeiling()
            let crypto = bench.cryptoLimit()
            let (envelope, envelopeElapsed) = bench.envelopeCost()
            StandardStreams.write(line: String(format: "  ceilings: emulator (h2load) %.0f req/s, crypto (all cores) %.0f envelopes/s", ceiling, crypto))
            StandardStreams.write(line: String(format: "  ratio: %.3f of the lower ceiling", best / min(ceiling, crypto)))
            StandardStreams.write(line: String(format: "  crypto, 1 core: %.1f µs of CPU per envelope, %.1f elapsed (1 KB plaintext)", envelope, envelopeElapsed))
            // Each row's median drain against the envelope measured around it (`Row`); every
            // drain's ratio beside it, and the median drain against the run's last envelope.
            for (name, row) in [("1 worker", oneWorker), ("2 workers", twoWorkers), ("backlog", drained)] {
                let (figures, around) = row.median
                let drains = row.drains.count == 1 ? "the envelope around this drain"
                    : "median of \(row.drains.count) drains, each against the envelope around it: \(row.ratios)"
                StandardStreams.write(line: "  CPU per delivery / crypto per envelope, \(name): "
                    + String(format: "%.1f / %.1f = %.2f", figures.cpuMicrosecondsPerDelivery, around, figures.cpuMicrosecondsPerDelivery / around)
                    + " (target <= 2; \(drains); "
                    + String(format: "%.2f against the run's last)", figures.cpuMicrosecondsPerDelivery / envelope))
            }
            writeStartUpShare(startUp, deliveries: deliveries, twoWorkers: twoWorkers.median)
            if let python = parsed["peer-python"], let script = parsed["peer-script"] {
                let peer = try await bench.aioapnsRate(python: python, script: script, requests: peerRequests)
                StandardStreams.write(line: String(format: "  peer: aioapns (Python, no encryption) %.0f pushes/s; worker (with encryption) %.0f; ratio %.2f (target >= 3)", peer, best, best / peer))
            } else {
                StandardStreams.write(line: "  peer: aioapns not run (pass --peer-python and --peer-script; bash Deploy/bench.sh pipeline does)")
            }
        } catch {
            await bench.tearDown(keepingWorkerLogs: true)
            throw .failure("\(error)")
        }
        await bench.tearDown()
    }

    static func write(_ label: String, _ figures: DrainFigures, note: String) {
        StandardStreams.write(line: "  \(label): " + String(
            format: "%8.0f deliveries/s, CPU %.1f µs per delivery, peak RSS %.1f MiB; emulator CPU %.0f µs per push",
            figures.rate, figures.cpuMicrosecondsPerDelivery, figures.peakMiB, figures.emulatorMicrosecondsPerPush) + " (\(note))")
        StandardStreams.write(line: "    CPU per delivery by worker thread: " + figures.cpuPerDeliveryByThread)
    }

    /// The target figure (p99 of every push), then what it is made of: the tail, and a job's
    /// first and last push (a 100-device job's pushes reach the emulator one after another).
    static func writeLatency(_ figures: PipelineRun.LatencyFigures, note: String, isTarget: Bool = true) {
        let percentile = APNsBenchmark.percentile
        StandardStreams.write(line: String(format: "  latency publish → accepted at %.0f deliveries/s", figures.rate) + " (\(note)): "
            + String(format: "p50 %.1f ms, p99 %.1f ms", figures.p50, figures.p99) + (isTarget ? " (target p99 <= 25)" : ""))
        StandardStreams.write(line: String(
            format: "    p90 %.1f ms, max %.1f ms; first push of a job p50/p99 %.1f / %.1f ms, last push %.1f / %.1f ms (%d jobs)",
            percentile(figures.all, 0.90), figures.all.last ?? .nan, percentile(figures.firstOfJob, 0.50),
            percentile(figures.firstOfJob, 0.99), percentile(figures.lastOfJob, 0.50), percentile(figures.lastOfJob, 0.99),
            figures.firstOfJob.count))
    }
}
