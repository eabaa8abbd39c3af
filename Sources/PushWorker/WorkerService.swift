import Foundation
import PushModel
import PushQueue
import PushRuntime
import PushStore

/// `pushd worker`'s consuming loop: jobs in, follow-ups confirmed, then acked.
///
/// At least once, nothing lost: a job is acked only after every event, retry and dead
/// letter it caused has been confirmed by the broker; if any publish fails the job is put
/// back and processed again (the collapse id makes the second push replace the first on
/// the phone). A worker killed at any point leaves its unacked jobs to the broker, which
/// hands them to another worker.
public final class WorkerService: Service {
    public let name = "worker"
    let consumerConnection: AMQPConnection
    let publisherConnection: AMQPConnection
    private let intake: JobIntake
    let processor: JobProcessor
    private let planner: FollowUpPlanner
    let topology: Topology
    let lanes: Lanes
    let reports: JobOutcomeTally
    let metrics: WorkerMetrics
    let logger: Logger
    /// Closed while PostgreSQL is unreachable: consumption pauses, held jobs wait.
    let gate = DependencyGate()
    /// Whether the dependencies answer again (the registry's `SELECT 1`).
    let dependencyProbe: @Sendable () async -> Bool

    init(
        consumerConnection: AMQPConnection, publisherConnection: AMQPConnection, intake: JobIntake, processor: JobProcessor,
        planner: FollowUpPlanner, topology: Topology, lanes: Lanes, reports: JobOutcomeTally, metrics: WorkerMetrics, logger: Logger,
        dependencyProbe: @escaping @Sendable () async -> Bool
    ) {
        self.dependencyProbe = dependencyProbe
        self.consumerConnection = consumerConnection
        self.publisherConnection = publisherConnection
        self.intake = intake
        self.processor = processor
        self.planner = planner
        self.topology = topology
        self.lanes = lanes
        self.reports = reports
        self.metrics = metrics
        self.logger = logger
    }

    /// Consumes the producers' jobs queue and the workers' retries queue until `shutdown`,
    /// then stops taking jobs, finishes those in flight (their follow-ups confirmed and acks
    /// sent) and returns. While PostgreSQL is down it takes no new jobs (the consumers are
    /// cancelled, nothing is requeued) and resumes once the database answers again.
    public func run(shutdown: ShutdownSignal) async throws {
        while !shutdown.isTriggered {
            if let failure = try await consumeUntilPaused(shutdown: shutdown), !shutdown.isTriggered { throw failure }
            guard !shutdown.isTriggered else { break }
            // Paused: the jobs held during the outage have been delivered already (they waited
            // for the gate); wait for it before taking new ones.
            await Self.first(of: { await self.gate.waitUntilOpen() }, { await shutdown.wait() })
            if !shutdown.isTriggered { logger.info("PostgreSQL answers again; consuming resumes") }
        }
        logger.info("worker drained")
    }

    /// One round of consuming: until shutdown, or until an outage closes the gate (then the
    /// consumers are cancelled and the held jobs finish once it reopens). Returns a
    /// consumer's failure, if any.
    private func consumeUntilPaused(shutdown: ShutdownSignal) async throws -> (any Error)? {
        // Each lane with its own prefetch (the broker enforces each apart), so a bulk backlog
        // fills at most its own slots; retries share the urgent prefetch.
        let queues = [
            (topology.jobsQueue, lanes.urgentPrefetch), (topology.bulkJobsQueue, lanes.bulkPrefetch),
            (topology.retriesQueue, lanes.urgentPrefetch), (topology.chunksQueue, lanes.bulkPrefetch),
        ]
        var consumers: [QueueConsumer] = []
        for (queue, prefetch) in queues {
            consumers.append(try await consumerConnection.consume(queue: queue, prefetch: prefetch))
        }
        logger.info("worker consuming", [
            "queues": .string(queues.map(\.0).joined(separator: ",")), "prefetch": .int(Int(lanes.urgentPrefetch)),
            "bulk_prefetch": .int(Int(lanes.bulkPrefetch)),
            "sealing": .string(processor.limits.sealOnLoops ? "http2 loops" : "pool"),
        ])
        let stopper = Task { [consumers] in
            await shutdown.wait()
            guard !Task.isCancelled else { return }
            logger.info("worker draining: no new jobs, finishing those in flight")
            for consumer in consumers { await consumer.cancel() }
        }
        let pauser = Task { [consumers] in
            await gate.waitUntilClosed()
            guard !Task.isCancelled else { return }
            logger.warning("PostgreSQL is unreachable: consuming paused, held jobs wait for it")
            for consumer in consumers { await consumer.cancel() }
        }
        defer {
            stopper.cancel()
            pauser.cancel()
        }
        let all = consumers
        let failure = await withTaskGroup(of: (any Error)?.self) { group -> (any Error)? in
            for consumer in all {
                let source: JobIntake.Source = switch consumer.queue {
                case topology.retriesQueue: .retries
                case topology.chunksQueue: .chunks
                default: .producers
                }
                group.addTask { [all] in
                    // Discarding: a finished job's task (and the task-local stack its async
                    // frames grew, about 22 KB) is freed at once. A plain task group keeps
                    // every finished child until its result is read, so a worker's memory
                    // grew with each job it handled until the consumer stopped.
                    await withDiscardingTaskGroup { jobs -> (any Error)? in
                        var failure: (any Error)?
                        do {
                            for try await message in consumer {
                                jobs.addTask { await self.handle(message, source: source, shutdown: shutdown) }
                            }
                        } catch {
                            failure = error
                            // One consumer failing stops the other: the service fails as a whole.
                            for other in all where other.consumerTag != consumer.consumerTag { await other.cancel() }
                        }
                        // Returning waits for the jobs in flight: a discarding group ends
                        // only once all its children have.
                        return failure
                    }
                }
            }
            var first: (any Error)?
            for await failure in group where first == nil { first = failure }
            return first
        }
        return failure
    }

    /// Intake, delivery, planning, then settlement: follow-ups confirmed, then the ack, then
    /// the metrics (a job that goes back to the queue is counted when it is settled for good).
    private func handle(_ message: QueueMessage, source: JobIntake.Source, shutdown: ShutdownSignal) async {
        metrics.jobsConsumed.increment()
        metrics.jobsInFlight.add(1)
        defer { metrics.jobsInFlight.add(-1) }
        let accepted: AcceptedJob
        switch intake.accept(message.body, publishedAt: message.timestamp, now: Date(), source: source) {
        case .deadLetter(let reason):
            logger.warning("job dead-lettered", ["reason": .string(reason.description), "message_id": .string(message.messageID ?? "")])
            await settle(
                message, followUps: [.deadLetter(reason, retry: nil)], document: nil, report: DeliveryReport(), refused: true, shutdown: shutdown)
            return
        case .accepted(let job):
            accepted = job
        }
        let log = logger.with(["job_id": .string(accepted.job.jobID), "attempt": .int(accepted.attempt)])
        let expired = accepted.hasExpired(now: Date())
        if expired, accepted.job.retry == nil && !accepted.job.report.completedEvent {
            // Too late to be of use: not sent, counted, and said why. A retry (its devices are
            // dead-lettered, as when the planner gives up) and a job that asked for
            // `job.completed` (its devices are counted) go on below, sending nothing.
            log.info("job expired before delivery; not sent", ["reason": .string("expires_at has passed")])
            _ = await message.ack()
            metrics.jobsCompleted.increment("expired")
            return
        }
        if !expired, accepted.document.needsSplitting(chunkSize: lanes.chunkSize) {
            await split(accepted, message, shutdown: shutdown)
            return
        }
        guard let report = await deliverHolding(accepted, message, shutdown: shutdown, log: log, expired: expired) else { return }
        var followUps = planner.plan(report.results, for: accepted, now: Date(), expired: expired)
        Self.log(report, followUps, to: log)
        var completed: JobCompletedEvent?
        switch await recordReport(report, followUps: followUps, for: accepted) {
        case .none: break
        case .publish(let event):
            completed = event
            followUps.append(.jobCompleted(event))
        case .failed(let error):
            log.warning("outcome tally not written; the job goes back to the queue", ["error": .string("\(error)")])
            try? await Task.sleep(for: .seconds(1))
            _ = await message.nack(requeue: true)
            metrics.jobsCompleted.increment("requeued")
            return
        }
        let confirmed = await settle(
            message, followUps: followUps, document: accepted.document, report: report, refused: false, expired: expired, shutdown: shutdown)
        if let completed, confirmed {
            // Only a crash before this line repeats the event (with the same message id).
            do { try await reports.markPublished(jobID: completed.jobID) } catch {
                log.warning("job.completed published but not marked; a redelivery may repeat it", ["error": .string("\(error)")])
            }
        }
        // After the ack: a slow database delays the next job here, never this one's ack.
        await recordNewlyCheckedKeys()
    }

    /// True once the broker confirmed every follow-up (whether or not the ack then reached it).
    @discardableResult
    private func settle(
        _ message: QueueMessage, followUps: [FollowUp], document: JobDocument?, report: DeliveryReport, refused: Bool, expired: Bool = false,
        shutdown: ShutdownSignal
    ) async -> Bool {
        if !followUps.isEmpty {
            let source = JobMessage(message)
            let requests = followUps.map { $0.publishRequest(topology: topology, message: source, document: document) }
            if let refusal = await publishFollowUps(requests, shutdown: shutdown) {
                logger.warning("follow-ups not confirmed; the job goes back to the queue",
                               ["failed": .int(refusal.count), "error": .string(refusal.error.description)])
                _ = await message.nack(requeue: true)
                metrics.jobsCompleted.increment("requeued")
                return false
            }
        }
        // Counted only when the ack reached the broker on the channel that delivered the job:
        // a stale ack (the connection was replaced meanwhile) means the job comes back and is
        // counted then.
        guard await message.ack() == .settled else {
            metrics.jobsCompleted.increment("requeued")
            return true
        }
        metrics.record(report, followUps: followUps)
        metrics.jobsCompleted.increment(refused ? "dead_lettered" : expired ? "expired" : "acked")
        return true
    }

    /// `FollowUpPublishing` over the publishing connection: the job is held while it recovers,
    /// until the worker stops.
    func publishFollowUps(_ requests: [PublishRequest], shutdown: ShutdownSignal) async -> FollowUpPublishing.Refusal? {
        let connection = publisherConnection
        let logger = logger
        return await FollowUpPublishing().publish(
            requests, with: { await connection.publish($0) },
            pause: { delay in
                await Self.first(of: { try? await Task.sleep(for: delay) }, { await shutdown.wait() })
                return !shutdown.isTriggered
            },
            onFirstRefusal: { refusal in
                logger.warning("follow-ups not confirmed; the job waits for the broker", [
                    "failed": .int(refusal.count), "error": .string(refusal.error.description),
                ])
            })
    }
}
