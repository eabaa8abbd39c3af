import Foundation
import PushModel
import PushQueue
import PushRuntime
import PushStore

/// `pushd cleanup`: consumes `token.invalid` events and prunes the devices they name, in
/// batches, idempotently. A token re-registered after APNs's 410 timestamp is kept (the
/// SQL function compares registration time and `invalid_since`).
public final class CleanupService: Service {
    public let name = "cleanup"
    private let connection: AMQPConnection
    private let registry: DeviceRegistry
    private let queue: String
    private let batchSize: Int
    private let metrics: WorkerMetrics
    private let logger: Logger

    public init(
        connection: AMQPConnection, registry: DeviceRegistry, queue: String, batchSize: Int = 200,
        metrics: WorkerMetrics, logger: Logger
    ) {
        self.connection = connection
        self.registry = registry
        self.queue = queue
        self.batchSize = max(1, batchSize)
        self.metrics = metrics
        self.logger = logger
    }

    public func run(shutdown: ShutdownSignal) async throws {
        let consumer = try await connection.consume(queue: queue, prefetch: UInt16(min(batchSize * 2, 1000)))
        logger.info("cleanup consuming", ["queue": .string(queue)])
        let stopper = Task {
            await shutdown.wait()
            await consumer.cancel()
        }
        defer { stopper.cancel() }
        let batches = BatchingSequence(base: consumer, size: batchSize, window: .milliseconds(50))
        do {
            for try await batch in batches {
                await prune(batch)
            }
        } catch {
            if !shutdown.isTriggered { throw error }
        }
        logger.info("cleanup stopped")
    }

    private func prune(_ messages: [QueueMessage]) async {
        var requests: [(message: QueueMessage, request: PruneRequest)] = []
        for message in messages {
            guard let request = Self.pruneRequest(from: message.body) else {
                metrics.pruneEvents.increment("malformed")
                logger.warning("malformed token.invalid event dead-lettered", ["message_id": .string(message.messageID ?? "")])
                _ = await message.reject()
                continue
            }
            requests.append((message, request))
        }
        guard !requests.isEmpty else { return }
        var attempt = 0
        while true {
            do {
                let deleted = try await registry.pruneBatch(requests.map(\.request))
                for (entry, wasDeleted) in zip(requests, deleted) {
                    let request = entry.request
                    metrics.pruneEvents.increment(wasDeleted ? "pruned" : "kept")
                    if wasDeleted { metrics.tokensPruned.increment(request.platform.rawValue) }
                    logger.info(wasDeleted ? "device pruned" : "token kept (re-registered or already gone)", [
                        "platform": .string(request.platform.rawValue), "app_id": .string(request.appID),
                        "token": .string(Redact.token(request.token)),
                    ])
                    _ = await entry.message.ack()
                }
                return
            } catch {
                attempt += 1
                guard error.isRetryable, attempt < 5 else {
                    logger.error("pruning failed; events go back to the queue", ["error": .string("\(error)")])
                    for entry in requests { _ = await entry.message.nack(requeue: true) }
                    return
                }
                try? await Task.sleep(for: Backoff(base: .milliseconds(200), cap: .seconds(5)).upperBound(attempt: attempt))
            }
        }
    }

    static func pruneRequest(from body: [UInt8]) -> PruneRequest? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              object["event"] as? String == "token.invalid",
              let platformText = object["platform"] as? String, let platform = Platform(rawValue: platformText),
              let appID = object["app_id"] as? String, let token = object["token"] as? String, !token.isEmpty
        else { return nil }
        let environment = (object["environment"] as? String).flatMap(PushEnvironment.init(rawValue:))
        let invalidSince = (object["invalid_since"] as? String).flatMap(RFC3339.date(from:))
        return PruneRequest(appID: appID, platform: platform, environment: environment, token: token, invalidSince: invalidSince)
    }
}

/// Groups an async sequence's elements into batches of at most `size`, closing a batch
/// early once `window` has passed since its first element.
struct BatchingSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
    typealias Element = [Base.Element]
    let base: Base
    let size: Int
    let window: Duration

    func makeAsyncIterator() -> AsyncThrowingStream<[Base.Element], any Error>.AsyncIterator {
        let (stream, continuation) = AsyncThrowingStream<[Base.Element], any Error>.makeStream()
        let pending = NSLockedBatch<Base.Element>()
        let task = Task {
            let flusher = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: window)
                    let batch = pending.take(olderThan: window)
                    if !batch.isEmpty { continuation.yield(batch) }
                }
            }
            defer { flusher.cancel() }
            do {
                for try await element in base {
                    if let full = pending.append(element, limit: size) { continuation.yield(full) }
                }
                let rest = pending.take(olderThan: .zero)
                if !rest.isEmpty { continuation.yield(rest) }
                continuation.finish()
            } catch {
                let rest = pending.take(olderThan: .zero)
                if !rest.isEmpty { continuation.yield(rest) }
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream.makeAsyncIterator()
    }
}

import Synchronization

/// The batch being filled, shared by the reading task and the timer that flushes it.
final class NSLockedBatch<Element: Sendable>: Sendable {
    private struct State {
        var elements: [Element] = []
        var firstAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    /// Appends; returns the full batch when `limit` is reached.
    func append(_ element: Element, limit: Int) -> [Element]? {
        state.withLock { state in
            if state.elements.isEmpty { state.firstAt = .now }
            state.elements.append(element)
            guard state.elements.count >= limit else { return nil }
            defer { state.elements = []; state.firstAt = nil }
            return state.elements
        }
    }

    /// Takes the batch if its first element is at least `age` old.
    func take(olderThan age: Duration) -> [Element] {
        state.withLock { state in
            guard let first = state.firstAt, ContinuousClock.now - first >= age else { return [] }
            defer { state.elements = []; state.firstAt = nil }
            return state.elements
        }
    }
}
