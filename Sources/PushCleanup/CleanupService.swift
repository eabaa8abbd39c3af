import Foundation
import PushMetrics
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
    private let metrics: CleanupMetrics
    private let logger: Logger

    public init(
        connection: AMQPConnection, registry: DeviceRegistry, queue: String, batchSize: Int = 200,
        metrics: CleanupMetrics, logger: Logger
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
                let deleted = try await registry.pruneAll(requests.map(\.request))
                for (entry, wasDeleted) in zip(requests, deleted) {
                    let request = entry.request
                    metrics.pruneEvents.increment(wasDeleted ? "pruned" : "kept")
                    if wasDeleted { metrics.tokensPruned.increment(request.platform.rawValue) }
                    logger.info(wasDeleted ? "token pruned" : "token kept (re-registered or already gone)", [
                        "platform": .string(request.platform.rawValue), "app_id": .string(request.appID),
                        "token_kind": .string(request.tokenKind?.rawValue ?? "device"),
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

    /// The prune request a `token.invalid` event asks for; nil for anything else.
    static func pruneRequest(from body: [UInt8]) -> PruneRequest? {
        guard let event = try? JSONDecoder().decode(TokenInvalidEvent.self, from: Data(body)) else { return nil }
        return PruneRequest(
            appID: event.appID, platform: event.platform, environment: event.environment, token: event.token,
            invalidSince: event.invalidSince, tokenKind: event.tokenKind)
    }
}
