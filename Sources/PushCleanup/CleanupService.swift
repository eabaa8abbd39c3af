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
                await prune(batch, shutdown: shutdown)
            }
        } catch {
            if !shutdown.isTriggered { throw error }
        }
        logger.info("cleanup stopped")
    }

    private func prune(_ messages: [QueueMessage], shutdown: ShutdownSignal) async {
        var requests: [(message: QueueMessage, request: PruneRequest)] = []
        for message in messages {
            switch Self.pruneRequest(from: message.body) {
            case .success(let request):
                requests.append((message, request))
            case .failure(let unusable):
                metrics.pruneEvents.increment("malformed")
                logger.warning("malformed token.invalid event dead-lettered", [
                    "message_id": .string(message.messageID ?? ""), "reason": .string(unusable.description),
                ])
                _ = await message.reject()
            }
        }
        guard !requests.isEmpty else { return }
        switch await pruneWithRetries(requests.map(\.request), shutdown: shutdown) {
        case .success(let deleted):
            for (entry, wasDeleted) in zip(requests, deleted) { await settle(entry.message, entry.request, deleted: wasDeleted) }
        case .failure(let error) where !error.isRetryable && !Self.isInterruption(error) && requests.count > 1:
            // The database refused an argument of one event, and the batch is atomic: prune
            // one by one so that only the refused event is dead-lettered and the others are
            // neither failed nor redelivered.
            logger.warning("a batch was refused; pruning its events one by one", ["error": .string("\(error)")])
            for entry in requests { await pruneAlone(entry.message, entry.request, shutdown: shutdown) }
        case .failure(let error):
            await settleFailed(requests.map(\.message), error)
        }
    }

    private func pruneAlone(_ message: QueueMessage, _ request: PruneRequest, shutdown: ShutdownSignal) async {
        switch await pruneWithRetries([request], shutdown: shutdown) {
        case .success(let deleted): await settle(message, request, deleted: deleted.first ?? false)
        case .failure(let error): await settleFailed([message], error)
        }
    }

    /// A refused event is dead-lettered; a dependency failure, or the cleanup stopping under
    /// the prune, puts the events back.
    private func settleFailed(_ messages: [QueueMessage], _ error: StoreError) async {
        if error.isRetryable || Self.isInterruption(error) {
            logger.error("pruning failed; events go back to the queue", ["error": .string("\(error)")])
            for message in messages { _ = await message.nack(requeue: true) }
        } else {
            logger.warning("token.invalid event refused by the database; dead-lettered", ["error": .string("\(error)")])
            for message in messages {
                metrics.pruneEvents.increment("malformed")
                _ = await message.reject()
            }
        }
    }

    /// The prune was cut short by the cleanup stopping (its task cancelled at the shutdown
    /// timeout, the pool closed): nothing the events did, so never a reason to dead-letter them.
    static func isInterruption(_ error: StoreError) -> Bool {
        switch error {
        case .cancelled, .poolClosed: true
        default: false
        }
    }

    private func settle(_ message: QueueMessage, _ request: PruneRequest, deleted: Bool) async {
        metrics.pruneEvents.increment(deleted ? "pruned" : "kept")
        if deleted { metrics.tokensPruned.increment(request.platform.rawValue) }
        logger.info(deleted ? "token pruned" : "token kept (re-registered or already gone)", [
            "platform": .string(request.platform.rawValue), "app_id": .string(request.appID),
            "token_kind": .string(request.tokenKind?.rawValue ?? "device"),
            "token": .string(Redact.token(request.token)),
        ])
        _ = await message.ack()
    }

    /// `pruneAll` (device and Live Activity tokens), retrying what may succeed if simply tried again, for as long as it takes:
    /// during a PostgreSQL outage the batch is held (unacked, so the consumer's prefetch
    /// stops further deliveries) rather than handed back, so an outage never pushes an event
    /// towards the queue's delivery limit. Only a shutdown gives up (the events go back).
    private func pruneWithRetries(_ requests: [PruneRequest], shutdown: ShutdownSignal) async -> Result<[Bool], StoreError> {
        var attempt = 0
        while true {
            do {
                return .success(try await registry.pruneAll(requests))
            } catch {
                attempt += 1
                guard error.isRetryable, !shutdown.isTriggered, !Task.isCancelled else { return .failure(error) }
                if attempt == 5 {
                    logger.warning("PostgreSQL unreachable; holding the batch until it answers", ["error": .string("\(error)")])
                }
                try? await Task.sleep(for: Backoff(base: .milliseconds(200), cap: .seconds(5)).upperBound(attempt: attempt))
            }
        }
    }
}
