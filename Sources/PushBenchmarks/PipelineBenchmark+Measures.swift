import Foundation
import PushCrypto
import PushDelivery

extension PipelineRun {
    /// Deliveries per second from jobs already queued to pushes accepted, and the CPU time
    /// and peak memory the workers spent on them (read before they are stopped).
    func throughput(deliveries: Int, workers count: Int) async throws -> DrainFigures {
        try await resetEmulator()
        try await publishJobs(deliveries: deliveries)
        let expected = (deliveries / deliveriesPerJob) * deliveriesPerJob
        let emulatorBefore = try await emulatorCPUSeconds()
        let started = Date().timeIntervalSince1970
        let workers = try startWorkers(count)
        defer { stop(workers) }
        try await waitForAccepted(expected)
        let usage = try usage(of: workers)
        // The drain ends when the emulator accepted its last push, not when a poll (every
        // 250 ms) saw it: timed by the poll, a one-second drain read up to a quarter slower.
        // The workers' CPU is read after the poll, which costs nothing (an idle worker used
        // no CPU tick in four seconds).
        let rate = Double(expected) / max(try await lastArrival() - started, 1e-3)
        return DrainFigures(
            deliveries: expected, rate: rate, usage: usage,
            emulatorCPUSeconds: try await emulatorCPUSeconds() - emulatorBefore)
    }

    /// The workers' CPU time and peak memory so far, from their own `/proc` entries (the
    /// pushd process's, under a wrapper that forks it).
    func usage(of workers: [Process]) throws -> WorkerUsage {
        let usages = workers.compactMap {
            WorkerUsage.read(pid: WrappedWorker.workerProcess(under: $0.processIdentifier, executable: workerExecutable))
        }
        guard usages.count == workers.count else { throw BenchmarkError("a worker exited before it was measured") }
        return WorkerUsage.total(usages)
    }

    /// Publish → accepted, over the pushes of a latency run: every push, and per job its
    /// first and its last push (how much of the figure is a job's own spread).
    struct LatencyFigures {
        var rate: Double
        var all: [Double]
        var firstOfJob: [Double]
        var lastOfJob: [Double]

        var p50: Double { APNsBenchmark.percentile(all, 0.50) }
        var p99: Double { APNsBenchmark.percentile(all, 0.99) }
    }

    /// Publishes jobs of `recipients` recipients (`devicesPerRecipient` pushes each) at `rate` deliveries/s for
    /// `seconds` with two workers running, then measures publish → accepted by the emulator
    /// for every push, and the rate achieved.
    func latency(rate: Double, seconds duration: Double, recipients: Int = recipientsPerJob) async throws -> LatencyFigures {
        try await resetEmulator()
        let workers = try startWorkers(2)
        defer { stop(workers) }
        let perJob = Double(recipients * devicesPerRecipient)
        // Warm-up before the clock starts: a worker's first job pays once for its HTTP/2
        // connections (TLS, the server's SETTINGS, the provider token's first check) and its
        // database sessions. The figure is the steady state; the log is reset after.
        let warmUpJobs = 4
        for _ in 0..<warmUpJobs { try await amqp.publish(job(label: "warm-up").1) }
        try await waitForAccepted(warmUpJobs * deliveriesPerJob)
        try await resetEmulator()
        let interval = perJob / max(rate, 1)
        var published: [String: Double] = [:]
        let start = Date().timeIntervalSince1970
        var next = start
        while next - start < duration {
            let (id, request) = job(recipients: recipients)
            let now = Date().timeIntervalSince1970
            if next > now { try await Task.sleep(for: .milliseconds(Int((next - now) * 1000))) }
            published[id] = Date().timeIntervalSince1970
            try await amqp.publish(request)
            next += interval
        }
        try await waitForAccepted(published.count * Int(perJob))
        var byJob: [String: [Double]] = [:]
        for arrival in try await arrivals() {
            guard let sent = published[arrival.jobID] else { continue }
            byJob[arrival.jobID, default: []].append((arrival.at - sent) * 1000)
        }
        guard !byJob.isEmpty else { throw BenchmarkError("no arrivals recorded (is the emulator in --fast mode?)") }
        return LatencyFigures(
            rate: Double(published.count) * perJob / duration, all: byJob.values.flatMap { $0 }.sorted(),
            firstOfJob: byJob.values.compactMap { $0.min() }.sorted(), lastOfJob: byJob.values.compactMap { $0.max() }.sorted())
    }

    /// One worker draining a backlog of `backlog` deliveries; its peak resident memory and
    /// CPU time.
    func peakMemory(backlog: Int) async throws -> DrainFigures {
        try await throughput(deliveries: backlog, workers: 1)
    }

    func h2loadCeiling() async throws -> Double {
        let p8 = try String(contentsOf: setup.credentials.appendingPathComponent("AuthKey_KEYID12345.p8"), encoding: .utf8)
        let jwt = try APNsTokenProvider(teamID: "TEAMID1234", keyID: "KEYID12345", privateKeyPEM: p8).token()
        let payload = Array(#"{"aps":{"alert":{"title":"New message","body":"Open the app to read it"},"mutable-content":1}}"#.utf8)
        return try APNsBenchmark.h2loadRate(
            url: "\(setup.emulatorURL)/3/device/\(String(repeating: "ab", count: 32))", jwt: jwt, bundle: Self.bundle,
            payload: payload, requests: 30_000, connections: 4).rate
    }

    /// Envelopes per second on all cores for a 1 KB plaintext.
    func cryptoLimit() -> Double {
        CryptoBenchmark.allCoreEnvelopeRate(seconds: 2)
    }

    /// Microseconds of CPU per envelope on one core (1 KB plaintext): the one operation a
    /// delivery cannot avoid, to set the workers' CPU per delivery against, in the same unit
    /// (`CryptoBenchmark.oneCoreEnvelopeCost`).
    func cryptoMicrosecondsPerEnvelope(seconds: Double = 2) -> Double {
        envelopeCost(seconds: seconds).cpuMicroseconds
    }

    /// One envelope's CPU and elapsed microseconds on one core; not a number if none could be
    /// sealed, so that every ratio against it prints as `nan` rather than as a pass.
    func envelopeCost(seconds: Double = 2) -> (cpuMicroseconds: Double, elapsedMicroseconds: Double) {
        CryptoBenchmark.oneCoreEnvelopeCost(seconds: seconds) ?? (.nan, .nan)
    }

    /// A drain and the envelope's cost measured just before and just after it (one second
    /// each, the mean of the two). This VM's speed drifts within a run, by a fifth within a
    /// minute at times: judged against one envelope measured at the end, a drain from a
    /// slower or faster minute read as a worse or better ratio than it was.
    func withEnvelope(_ drain: () async throws -> DrainFigures) async throws -> (drain: DrainFigures, envelope: Double) {
        let before = cryptoMicrosecondsPerEnvelope(seconds: 1)
        let figures = try await drain()
        return (figures, (before + cryptoMicrosecondsPerEnvelope(seconds: 1)) / 2)
    }
}
