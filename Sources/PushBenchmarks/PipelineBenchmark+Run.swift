import Foundation
import PushCommandLine
import PushModel
import PushCrypto
import PushDelivery
import PushQueue
import PushStore

/// One pipeline benchmark: its own topology prefix, demo devices, and worker processes.
final class PipelineRun {
    let setup: PipelineBenchmark.Setup
    let prefix = "bench-\(UUID().uuidString.prefix(8).lowercased())"
    let topology: Topology
    let pool: ConnectionPool
    let amqp: AMQPConnection
    let admin: HTTP2Client
    var recipients: [String] = []
    var workerLogs: [URL] = []
    /// The digests of the run's keys, recorded as checked at registration and removed with
    /// its devices (nothing else uses these fresh keys).
    private var recordedKeyDigests: [Data] = []
    /// The `pushd` whose `worker` the drains start: this one unless a comparison sets another.
    var workerExecutable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    static let recipientsPerJob = 50
    /// Jobs for the iOS app only (`--platforms ios`): one push per recipient, all on one
    /// HTTP/2 client, as a deployment whose traffic is one platform's.
    var iosOnly = false
    /// Pushes per recipient of a job: each has an iOS and an Android device.
    var devicesPerRecipient: Int { iosOnly ? 1 : 2 }
    /// Pushes of one job of `recipientsPerJob` recipients.
    var deliveriesPerJob: Int { Self.recipientsPerJob * devicesPerRecipient }
    static let bundle = "com.example.app"
    static let project = "demo-project"

    init(setup: PipelineBenchmark.Setup) async throws {
        self.setup = setup
        topology = Topology(prefix: prefix)
        pool = ConnectionPool(configuration: try StoreConfiguration(url: setup.databaseURL))
        var configuration = try AMQPConfiguration(url: setup.amqpURL)
        configuration.connectionName = "pushd-bench-pipeline"
        amqp = try AMQPConnection(configuration: configuration, topology: topology)
        await amqp.start()
        try await amqp.waitUntilConnected(timeout: .seconds(20))
        admin = try HTTP2Client(configuration: .init(engine: .libcurl, maximumInFlight: 4))
        admin.start()
        try await registerDevices(recipients: 1000)
    }

    /// 1,000 recipients with an iOS and an Android device each, ten device keys round-robin,
    /// registered as `pushd device register` registers them: each key checked in full and
    /// recorded as checked. So the workers' figures are of deliveries, not of this run's ten
    /// new keys (a first full check is 4-7 ms; `bench crypto` prints it, "a key not in the
    /// cache").
    private func registerDevices(recipients count: Int) async throws {
        let keys = try (0..<10).map { _ in try DevicePrivateKey.generate().publicKey.subjectPublicKeyInfoBase64 }
        for key in keys { _ = try DevicePublicKey(parsing: key) }
        let registry = DeviceRegistry(pool: pool)
        let digests = keys.map(DevicePublicKey.checkDigest(ofKeyText:))
        try await registry.recordPublicKeyChecks(digests)
        recordedKeyDigests = digests.map { Data($0) }
        for index in 0..<count {
            let recipient = "\(prefix)-r\(index)"
            recipients.append(recipient)
            let hex = String(format: "%08x", index) + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            _ = try await registry.register(DeviceRegistration(
                recipientID: recipient, platform: .ios, appID: Self.bundle, environment: .production,
                token: String(("c0de" + hex + String(repeating: "0", count: 64)).prefix(64)), publicKey: keys[index % 10]))
            _ = try await registry.register(DeviceRegistration(
                recipientID: recipient, platform: .android, appID: Self.project, environment: nil,
                token: "bench-\(hex)", publicKey: keys[(index + 5) % 10]))
        }
    }

    /// Removes what the run made: its devices, topology and, unless a failure is to be
    /// explained by them (their paths are printed then), its workers' logs.
    func tearDown(keepingWorkerLogs: Bool = false) async {
        if keepingWorkerLogs {
            for log in workerLogs { StandardStreams.write(line: "  worker log kept: \(log.path)") }
        } else {
            for log in workerLogs { try? FileManager.default.removeItem(at: log) }
        }
        _ = try? await pool.query("DELETE FROM devices WHERE recipient_id LIKE \(prefix + "-%")")
        _ = try? await pool.query("DELETE FROM pushd_public_key_checks WHERE digest = ANY(\(recordedKeyDigests))")
        try? await amqp.delete(topology)
        await amqp.close()
        await pool.shutdown()
        await admin.shutdown()
    }

    // MARK: - Jobs and workers

    private var jobCounter = 0

    /// Publishes jobs for `deliveries` pushes (50 recipients per job, `devicesPerRecipient` pushes
    /// each) to `lane`; returns their ids.
    @discardableResult
    func publishJobs(deliveries: Int, lane: NotificationJob.Lane = .urgent) async throws -> [String] {
        let jobCount = max(1, deliveries / deliveriesPerJob)
        var requests: [PublishRequest] = []
        var ids: [String] = []
        for _ in 0..<jobCount {
            let (id, request) = job(lane: lane)
            ids.append(id)
            requests.append(request)
        }
        for start in stride(from: 0, to: requests.count, by: 500) {
            for result in await amqp.publish(Array(requests[start..<min(start + 500, requests.count)])) { try result.get() }
        }
        return ids
    }

    func job(recipients count: Int = recipientsPerJob, lane: NotificationJob.Lane = .urgent, label: String = "job") -> (String, PublishRequest) {
        jobCounter += 1
        let id = "\(prefix)-\(label)-\(jobCounter)"
        let first = (jobCounter * Self.recipientsPerJob) % recipients.count
        let ids = (0..<count).map { recipients[(first + $0) % recipients.count] }
        let job: [String: Any] = [
            "version": 1, "job_id": id,
            "app": iosOnly ? ["ios_bundle_id": Self.bundle] : ["ios_bundle_id": Self.bundle, "fcm_project_id": Self.project],
            "recipients": ["recipient_ids": ids],
            "content": ["title": "Benchmark", "message": String(repeating: "x", count: 800), "data": ["n": jobCounter]],
            "fallback": ["title": "New message", "message": "Open the app to read it"],
            "delivery": ["lane": lane.rawValue],
        ]
        let body = (try? JSONSerialization.data(withJSONObject: job)) ?? Data()
        return (id, PublishRequest(
            exchange: topology.jobsExchange, routingKey: lane.routingKey,
            message: OutgoingMessage(body: body, contentType: "application/json", messageID: id)))
    }

    func startWorkers(_ count: Int) throws -> [Process] {
        let credentials = setup.credentials
        let environment = ProcessInfo.processInfo.environment.merging([
            "PUSHD_TOPOLOGY_PREFIX": prefix, "PUSHD_METRICS_PORT": "0", "PUSHD_CA_FILE": setup.caFile,
            "PUSHD_APNS_TEAM_ID": "TEAMID1234", "PUSHD_APNS_KEY_ID": "KEYID12345",
            "PUSHD_APNS_KEY_FILE": credentials.appendingPathComponent("AuthKey_KEYID12345.p8").path,
            "PUSHD_APNS_BUNDLE_IDS": Self.bundle, "PUSHD_APNS_BASE_URL": setup.emulatorURL,
            "PUSHD_FCM_SERVICE_ACCOUNT_FILES": credentials.appendingPathComponent("service-account-\(Self.project).json").path,
            "PUSHD_FCM_BASE_URL": setup.emulatorURL, "PUSHD_LOG_LEVEL": "warning",
        ]) { $1 }
        let executable = workerExecutable
        // For profiling: `PUSHD_BENCH_WORKER_WRAPPER="valgrind --tool=massif"` (or
        // `"perf record -g -o /tmp/worker.data --"`) runs each worker under that command (split
        // on spaces, looked up on PATH); the figures are the worker's own (`WrappedWorker`).
        let wrapper = (ProcessInfo.processInfo.environment["PUSHD_BENCH_WORKER_WRAPPER"] ?? "")
            .split(separator: " ").map(String.init)
        return try (0..<count).map { _ in
            let process = Process()
            if wrapper.isEmpty {
                process.executableURL = executable
                process.arguments = ["worker"]
            } else {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = wrapper + [executable.path, "worker"]
            }
            process.environment = environment
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-worker-\(UUID().uuidString.prefix(4)).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: log)
            workerLogs.append(log)
            try process.run()
            return process
        }
    }

    func stop(_ workers: [Process]) {
        for worker in workers { WrappedWorker.terminate(worker) }
        for worker in workers { worker.waitUntilExit() }
    }

    // MARK: - Emulator

    func accepted() async throws -> Int {
        try await stats()["total_accepted"] as? Int ?? 0
    }

    /// The CPU time the emulator's processes have used so far.
    func emulatorCPUSeconds() async throws -> Double {
        guard let seconds = try await stats()["cpu_seconds"] as? Double else {
            throw BenchmarkError("the emulator's /stats has no cpu_seconds")
        }
        return seconds
    }

    private func stats() async throws -> [String: Any] {
        let response = try await admin.send(HTTPRequest(method: .get, url: setup.adminURL + "/stats"))
        return try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
    }

    func resetEmulator() async throws {
        _ = try await admin.send(HTTPRequest(method: .post, url: setup.adminURL + "/reset"))
    }

    func waitForAccepted(_ count: Int, timeout: Duration = .seconds(300)) async throws {
        let deadline = ContinuousClock.now + timeout
        var last = -1
        var lastChange = ContinuousClock.now
        while true {
            // The emulator's admin endpoint shares two busy cores with everything else and
            // may miss a poll's timeout; a missed poll is no progress, which the stall check
            // below still bounds. Each poll makes every emulator process stop and report
            // (8–14 s per answer while a 100,000-push backlog drains), so polls are spaced
            // and the stall window is generous: polling every 50 ms took CPU from the very
            // worker being measured and reported stalls that were only slow answers.
            let now = (try? await accepted()) ?? last
            if now >= count { return }
            if now != last { (last, lastChange) = (now, .now) }
            guard ContinuousClock.now < deadline, ContinuousClock.now - lastChange < .seconds(90) else {
                let tail = workerLogs.last.flatMap { try? String(contentsOf: $0, encoding: .utf8) }?.suffix(1500) ?? ""
                throw BenchmarkError("stalled: \(now) of \(count) pushes accepted; last worker log:\n\(tail)")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }

    /// When the emulator received the last push it accepted (seconds since 1970, its clock
    /// and ours being the same machine's): the end of a drain, to the microsecond.
    func lastArrival() async throws -> Double {
        let probe = try await pushesPage(since: Int.max - 1, limit: 1)
        guard let last = probe["last_seq"] as? Int, last > 0,
              let push = (try await pushesPage(since: last - 1, limit: 1)["pushes"] as? [[String: Any]])?.first,
              let at = push["received_at"] as? Double
        else { throw BenchmarkError("the emulator's log has no last push with its arrival time (is it in --fast mode?)") }
        return at
    }

    private func pushesPage(since: Int, limit: Int) async throws -> [String: Any] {
        let response = try await admin.send(HTTPRequest(method: .get, url: setup.adminURL + "/pushes?since=\(since)&limit=\(limit)"))
        return try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
    }

    /// Every accepted push's job id (collapse id) and arrival time.
    func arrivals() async throws -> [(jobID: String, at: Double)] {
        var cursor = 0
        return try await arrivals(after: &cursor)
    }

    /// The pushes accepted after `cursor` (a sequence number of the emulator's log), which is
    /// advanced past them: for polling a growing log without reading it from the start.
    func arrivals(after cursor: inout Int) async throws -> [(jobID: String, at: Double)] {
        var all: [(String, Double)] = []
        while true {
            let page = try await pushesPage(since: cursor, limit: 200)
            let pushes = page["pushes"] as? [[String: Any]] ?? []
            if pushes.isEmpty { return all }
            for push in pushes {
                let headers = push["headers"] as? [String: Any]
                var job = headers?["apns-collapse-id"] as? String
                if job == nil, let text = push["body"] as? String,
                   let body = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] {
                    job = ((body["message"] as? [String: Any])?["data"] as? [String: Any])?["tag"] as? String
                }
                if let job, let at = push["received_at"] as? Double { all.append((job, at)) }
            }
            cursor = page["next_since"] as? Int ?? cursor + pushes.count
        }
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
