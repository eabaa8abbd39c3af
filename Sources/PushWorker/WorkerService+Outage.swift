import Foundation
import PushQueue
import PushRuntime

/// A PostgreSQL outage: the worker pauses instead of handing jobs back, so the deliveries a
/// job spends waiting do not grow with the outage (`DependencyGate`).
extension WorkerService {
    /// Delivers, holding the job through a PostgreSQL outage rather than handing it back:
    /// the gate closes (consumption pauses, a probe watches the database), the job waits for
    /// it to reopen and goes on from the batch that failed. nil when the job went back to the queue (the worker is
    /// stopping, or the lookup failed for a reason waiting cannot fix).
    func deliverHolding(
        _ accepted: AcceptedJob, _ message: QueueMessage, shutdown: ShutdownSignal, log: Logger, expired: Bool = false
    ) async -> DeliveryReport? {
        var progress = JobProcessor.Progress(report: DeliveryReport(keepingDeliveredIDs: accepted.job.report.completedEvent))
        while true {
            let failure: JobProcessor.Interruption
            do {
                try await processor.deliver(accepted, progress: &progress, expired: expired)
                return progress.report
            } catch {
                failure = error
            }
            if case .lookup(let cause) = failure, cause.isRetryable, !shutdown.isTriggered, !Task.isCancelled {
                if gate.close() { startProbe() }
                log.warning("device lookup failed; the job waits for PostgreSQL", ["error": .string("\(cause)")])
                await Self.first(of: { await self.gate.waitUntilOpen() }, { await shutdown.wait() })
                if gate.isOpen && !shutdown.isTriggered && !Task.isCancelled { continue }
            } else if case .lookup = failure {
                // Waiting cannot fix it: back off briefly so the job does not spin between the
                // queue and this worker (the queue's delivery limit ends a poison job).
                try? await Task.sleep(for: .seconds(1))
            }
            log.warning("the job goes back to the queue", ["error": .string("\(failure)")])
            _ = await message.nack(requeue: true)
            metrics.jobsCompleted.increment("requeued")
            return nil
        }
    }

    /// Polls the database until it answers, then opens the gate.
    func startProbe() {
        Task { [gate, dependencyProbe, logger] in
            var attempt = 0
            while !Task.isCancelled {
                attempt += 1
                try? await Task.sleep(for: Backoff(base: .milliseconds(250), cap: .seconds(5)).upperBound(attempt: attempt))
                if await dependencyProbe() {
                    logger.info("PostgreSQL answers again", ["probes": .int(attempt)])
                    gate.open()
                    return
                }
            }
        }
    }

    /// Waits for whichever of two waits returns first (both must return when cancelled).
    static func first(of one: @escaping @Sendable () async -> Void, _ other: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await one() }
            group.addTask { await other() }
            await group.next()
            group.cancelAll()
        }
    }
}
