import Foundation
import PushCommandLine
import PushProducer
import PushQueue
import PushRuntime
import PushWorker

/// `pushd enqueue`: publishes jobs with publisher confirms.
enum EnqueueCommand: Subcommand {
    static let name = "enqueue"
    static let summary = "publish jobs (one JSON job or NDJSON) from a file or stdin"
    static let help = """
        usage: pushd enqueue [--file FILE] [--config FILE] [--amqp-url URL] [--topology-prefix P] [--batch N]

        Reads one JSON job, or one job per line (NDJSON), from FILE or standard input,
        validates each against Schemas/job.v1.schema.json, publishes them persistent with
        publisher confirms (pipelined, N at a time, default 500) to the job's lane (routing
        key `job` for urgent, the default; `bulk` for "delivery": {"lane": "bulk"}), and
        prints how many the broker accepted and how fast. Exits 1 if any job was refused.

        Reads the same configuration as the worker (--config / PUSHD_CONFIG, then the
        environment: amqp_url, topology_prefix, allow_insecure_transport), so it publishes to
        the jobs exchange the workers of that prefix consume. It declares nothing: a job
        that no queue takes is reported as refused, never silently dropped.
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["file", "config", "amqp-url", "topology-prefix", "batch"])
        let batchSize = try parsed.integer("batch", default: 500)
        let input: Data
        if let path = parsed["file"] {
            guard let data = FileManager.default.contents(atPath: path) else { throw .failure("cannot read \(path)") }
            input = data
        } else {
            input = StandardStreams.readAllInput()
        }
        let jobs = Self.split(input)
        guard !jobs.isEmpty else { throw .failure("no jobs in the input") }
        var environment = ProcessInfo.processInfo.environment
        if let url = parsed["amqp-url"] { environment["PUSHD_AMQP_URL"] = url }
        if let prefix = parsed["topology-prefix"] { environment["PUSHD_TOPOLOGY_PREFIX"] = prefix }
        let configuration: WorkerConfiguration
        do {
            configuration = try WorkerConfiguration.load(
                file: parsed["config"], environment: environment, needsDelivery: false, needsDatabase: false)
        } catch {
            throw .usage(error.description)
        }
        let logger = Logger(label: "pushd.enqueue", minimumLevel: .warning)
        let topology = Topology(prefix: configuration.topologyPrefix)
        let connection: AMQPConnection
        do {
            var amqp = try AMQPConfiguration(url: configuration.amqpURL)
            amqp.connectionName = "pushd-enqueue"
            // No topology: a producer declares nothing (least privilege; a wrong prefix must
            // not create queues nobody consumes). Publishes are mandatory, so a job no queue
            // takes comes back as refused.
            connection = try AMQPConnection(configuration: amqp, topology: nil, logger: logger)
            await connection.start()
            try await connection.waitUntilConnected(timeout: .seconds(15))
        } catch {
            throw .failure("cannot connect to RabbitMQ: \(error)")
        }
        let publisher = JobPublisher(connection: connection, topology: topology)
        let started = ContinuousClock.now
        var accepted = 0
        var refused: [String] = []
        for start in stride(from: 0, to: jobs.count, by: batchSize) {
            let batch = Array(jobs[start..<min(start + batchSize, jobs.count)])
            for (offset, result) in await publisher.publish(jobs: batch).enumerated() {
                switch result {
                case .success: accepted += 1
                case .failure(let error): refused.append("job \(start + offset + 1): \(error)")
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        await connection.close()
        for line in refused.prefix(20) { StandardStreams.writeError(line: line) }
        print(String(format: "enqueued %d of %d jobs in %.3f s (%.0f jobs/s, confirmed by the broker)",
                     accepted, jobs.count, seconds, Double(accepted) / max(seconds, 1e-9)))
        if !refused.isEmpty { throw .failure("\(refused.count) job(s) refused") }
    }

    /// One JSON document, or one per non-empty line.
    static func split(_ data: Data) -> [[UInt8]] {
        let bytes = [UInt8](data)
        if (try? JSONSerialization.jsonObject(with: data)) != nil { return [bytes] }
        return bytes.split(separator: UInt8(ascii: "\n")).map(Array.init).filter { line in
            line.contains { !($0 == 32 || $0 == 9 || $0 == 13) }
        }
    }
}
