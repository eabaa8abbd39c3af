import Foundation
import PushCommandLine
import PushQueue
import PushRuntime

/// `pushd bench queue`: how fast pushd publishes with confirms and consumes with acks,
/// against the real broker, on a scratch copy of the topology (quorum queues, persistent
/// messages, as in production) that it deletes afterwards, also when it fails.
enum QueueBenchmark {
    struct Options {
        var messages: Int
        var size: Int
        var batch: Int
        var inFlightBatches: Int
        var prefetch: Int
    }

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["messages", "size", "batch", "in-flight", "prefetch", "amqp-url"])
        let options = Options(
            messages: try parsed.integer("messages", default: 20_000),
            size: try parsed.integer("size", default: 1024, minimum: 0),
            batch: try parsed.integer("batch", default: 500),
            inFlightBatches: try parsed.integer("in-flight", default: 4),
            prefetch: try parsed.integer("prefetch", default: 300))
        guard options.prefetch <= Int(UInt16.max) else { throw .usage("--prefetch must be at most \(UInt16.max)") }
        guard let url = parsed["amqp-url"] ?? ProcessInfo.processInfo.environment["PUSHD_AMQP_URL"] else {
            throw .usage("give the broker with --amqp-url or PUSHD_AMQP_URL (locally: eval \"$(Deploy/local/services.sh env)\")")
        }
        var configuration: AMQPConfiguration
        do { configuration = try AMQPConfiguration(url: url) } catch { throw .usage(error.description) }
        let logger = Logger(label: "pushd.bench", minimumLevel: .warning)
        let topology = Topology(prefix: "pushd-bench-\(String(UInt32.random(in: .min ... .max), radix: 16))", retryTiers: [])

        configuration.connectionName = "pushd-bench-publisher"
        let publisher = try await connect(configuration, topology: topology, logger: logger)
        configuration.connectionName = "pushd-bench-consumer"
        let consumer: AMQPConnection
        do {
            consumer = try await connect(configuration, topology: nil, logger: logger)
        } catch {
            try? await publisher.delete(topology)
            await publisher.close()
            throw error
        }

        print("bench queue: RabbitMQ at \(configuration.redactedURL), quorum queue \(topology.jobsQueue)")
        print("  \(options.messages) persistent messages of \(options.size) bytes; publish batches of \(options.batch), "
              + "\(options.inFlightBatches) in flight; consume with prefetch \(options.prefetch), one ack per message")
        let outcome = await measure(publisher: publisher, consumer: consumer, topology: topology, options: options)
        let cleanup: Result<Void, QueueError>
        do { try await publisher.delete(topology); cleanup = .success(()) } catch { cleanup = .failure(error) }
        await consumer.close()
        await publisher.close()
        switch outcome {
        case .success(let lines): lines.forEach { print($0) }
        case .failure(let error): throw .failure(error.description)
        }
        if case .failure(let error) = cleanup {
            throw .failure("scratch topology \(topology.prefix).* could not be deleted: \(error)")
        }
    }

    private static func connect(_ configuration: AMQPConfiguration, topology: Topology?, logger: Logger) async throws(CLIError) -> AMQPConnection {
        do throws(QueueError) {
            let connection = try AMQPConnection(configuration: configuration, topology: topology, logger: logger)
            await connection.start()
            do {
                try await connection.waitUntilConnected(timeout: .seconds(15))
            } catch {
                await connection.close()
                throw error
            }
            return connection
        } catch {
            throw .failure(error.description)
        }
    }

    private static func measure(
        publisher: AMQPConnection, consumer: AMQPConnection, topology: Topology, options: Options
    ) async -> Result<[String], QueueError> {
        do throws(QueueError) {
            let body = [UInt8](repeating: UInt8(ascii: "x"), count: options.size)
            let request: @Sendable (Int) -> PublishRequest = { index in
                PublishRequest(exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey,
                               message: OutgoingMessage(body: body, contentType: "application/json", messageID: "bench-\(index)"))
            }
            var lines: [String] = []

            let sequential = min(options.messages, 1000)
            let (sequentialRate, latencies) = try await publishOneByOne(publisher, count: sequential, request)
            lines.append(String(format: "  publish, await each confirm       : %10.0f msgs/s  (confirm p50 %.2f ms, p99 %.2f ms, %d msgs)",
                                sequentialRate, percentile(latencies, 0.5), percentile(latencies, 0.99), sequential))

            let pipelinedRate = try await publishPipelined(publisher, count: options.messages, options: options, request)
            lines.append(String(format: "  publish, pipelined confirms        : %10.0f msgs/s", pipelinedRate))

            let total = sequential + options.messages
            let consumeRate = try await consumeAll(consumer, queue: topology.jobsQueue, count: total, prefetch: UInt16(options.prefetch))
            lines.append(String(format: "  consume with manual ack            : %10.0f msgs/s  (%d msgs)", consumeRate, total))

            let left = try await publisher.statistics(queue: topology.jobsQueue).messages
            if left != 0 { lines.append("  WARNING: \(left) messages left in the queue after consuming") }
            return .success(lines)
        } catch {
            return .failure(error)
        }
    }
}
