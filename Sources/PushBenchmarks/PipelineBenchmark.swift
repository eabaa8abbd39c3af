import Foundation
import PushCommandLine
import PushCrypto
import PushDelivery
import PushQueue
import PushStore
import PushProducer

/// `pushd bench pipeline`: end to end on this machine. Jobs already queued → pushes accepted
/// by the emulator, with one worker and with two; publish-to-acceptance latency at half the
/// maximum rate; a worker's peak memory with a 100,000-delivery backlog; and the ceilings
/// (the emulator's h2load rate, the crypto limit) with our rate as a ratio of the lower.
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
            arguments, options: ["emulator-url", "emulator-admin", "ca-file", "credentials", "deliveries", "backlog", "mode", "urgent-jobs"])
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
        let bench: PipelineRun
        do { bench = try await PipelineRun(setup: setup) } catch { throw .failure("set-up failed: \(error)") }
        if let mode = parsed["mode"] {
            guard mode == "urgent-under-bulk" else { throw .usage("--mode: only urgent-under-bulk (or none for the full run)") }
            let urgentJobs = try parsed.integer("urgent-jobs", default: 200)
            do {
                StandardStreams.write(line: "bench pipeline urgent-under-bulk: two workers, default prefetch; devices registered in \(bench.prefix)")
                try await urgentUnderBulk(bench, backlog: backlog, urgentJobs: urgentJobs)
            } catch {
                await bench.tearDown()
                throw .failure("\(error)")
            }
            await bench.tearDown()
            return
        }
        do {
            StandardStreams.write(line: "bench pipeline: all on loopback, \(ProcessInfo.processInfo.activeProcessorCount) cores; devices registered in \(bench.prefix)")
            let oneWorker = try await bench.throughput(deliveries: deliveries, workers: 1)
            StandardStreams.write(line: String(format: "  1 worker : %8.0f deliveries/s (%d deliveries, queued before start)", oneWorker, deliveries))
            let twoWorkers = try await bench.throughput(deliveries: deliveries, workers: 2)
            StandardStreams.write(line: String(format: "  2 workers: %8.0f deliveries/s", twoWorkers))
            let best = max(oneWorker, twoWorkers)
            let (p50, p99, rate) = try await bench.latency(rate: best / 2, seconds: 10)
            StandardStreams.write(line: String(format: "  latency publish → accepted at %.0f deliveries/s (half the maximum): p50 %.1f ms, p99 %.1f ms", rate, p50, p99))
            let peak = try await bench.peakMemory(backlog: backlog)
            StandardStreams.write(line: String(format: "  worker peak memory (VmHWM) with a %d-delivery backlog: %.1f MiB", backlog, Double(peak) / 1_048_576))
            let ceiling = try await bench.h2loadCeiling()
            let crypto = bench.cryptoLimit()
            StandardStreams.write(line: String(format: "  ceilings: emulator (h2load) %.0f req/s, crypto (all cores) %.0f envelopes/s", ceiling, crypto))
            StandardStreams.write(line: String(format: "  ratio: %.3f of the lower ceiling", best / min(ceiling, crypto)))
        } catch {
            await bench.tearDown()
            throw .failure("\(error)")
        }
        await bench.tearDown()
    }
}
