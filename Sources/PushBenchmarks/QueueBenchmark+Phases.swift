import PushQueue
import Synchronization

extension QueueBenchmark {
    /// One message at a time, each confirm awaited before the next publish: the latency of a
    /// confirm (a quorum queue fsyncs before it confirms), what a worker pays per job step.
    static func publishOneByOne(
        _ connection: AMQPConnection, count: Int, _ request: (Int) -> PublishRequest
    ) async throws(QueueError) -> (rate: Double, latencies: [Double]) {
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        let clock = ContinuousClock()
        let start = clock.now
        for index in 0..<count {
            let sent = clock.now
            try await connection.publish(request(index))
            latencies.append(milliseconds(clock.now - sent))
        }
        return (Double(count) / seconds(clock.now - start), latencies)
    }

    /// Batches published back to back with several batches awaiting their confirms at once,
    /// so the broker always has work: the throughput figure.
    static func publishPipelined(
        _ connection: AMQPConnection, count: Int, options: Options, _ request: @escaping @Sendable (Int) -> PublishRequest
    ) async throws(QueueError) -> Double {
        let next = Counter()
        let batch = options.batch
        let clock = ContinuousClock()
        let start = clock.now
        let failure: QueueError? = await withTaskGroup(of: QueueError?.self) { group in
            for _ in 0..<options.inFlightBatches {
                group.addTask {
                    while true {
                        let first = next.take(batch)
                        guard first < count else { return nil }
                        let requests = (first..<min(first + batch, count)).map { request(1_000_000 + $0) }
                        for result in await connection.publish(requests) {
                            if case .failure(let error) = result { return error }
                        }
                    }
                }
            }
            var first: QueueError?
            for await result in group where first == nil { first = result }
            return first
        }
        if let failure { throw failure }
        return Double(count) / seconds(clock.now - start)
    }

    /// Consumes `count` messages and acknowledges each one.
    static func consumeAll(_ connection: AMQPConnection, queue: String, count: Int, prefetch: UInt16) async throws(QueueError) -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        let consumer = try await connection.consume(queue: queue, prefetch: prefetch)
        var received = 0
        do {
            for try await message in consumer {
                guard await message.ack() == .settled else {
                    throw QueueError.connectionLost(reason: "an ack was not sent (connection lost during the benchmark)")
                }
                received += 1
                if received == count { break }
            }
        } catch let error as QueueError {
            throw error
        } catch {
            throw .library(operation: "consume", status: 0, message: "\(error)")
        }
        let elapsed = clock.now - start
        await consumer.cancel()
        return Double(received) / seconds(elapsed)
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    static func milliseconds(_ duration: Duration) -> Double { seconds(duration) * 1000 }
}

/// The next message index to publish, shared by the publishing tasks.
private final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    /// Reserves `count` indices; returns the first.
    func take(_ count: Int) -> Int {
        value.wrappingAdd(count, ordering: .relaxed).oldValue
    }
}
