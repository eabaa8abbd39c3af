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
    private let processor: JobProcessor
    private let planner: FollowUpPlanner
    let topology: Topology
    let lanes: Lanes
    let reports: JobOutcomeTally
    let metrics: WorkerMetrics
    let logger: Logger

    init(
        consumerConnection: AMQPConnection, publisherConnection: AMQPConnection, intake: JobIntake, processor: JobProcessor,
        planner: FollowUpPlanner, topology: Topology, lanes: Lanes, reports: JobOutcomeTally, metrics: WorkerMetrics, logger: Logger
    ) {
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

    /// Consumes until `shutdown`, then stops taking jobs, finishes those in flight (their
    /// follow-ups confirmed and acks sent) and returns.
    public func run(shutdown: ShutdownSignal) async throws {
        let consumers = try await consumeLanes()
        let stopper = Task {
            await shutdown.wait()
            logger.info("worker draining: no new jobs, finishing those in flight")
            for consumer in consumers { await consumer.cancel() }
        }
        defer { stopper.cancel() }
        let failure = await handleAll(from: consumers)
        if let failure, !shutdown.isTriggered { throw failure }
        logger.info("worker drained")
    }

    /// Intake, delivery, planning, then settlement: follow-ups confirmed, then the ack, then
    /// the metrics (a job that goes back to the queue is counted when it is settled for good).
    func handle(_ message: QueueMessage) async {
        metrics.jobsConsumed.increment()
        metrics.jobsInFlight.add(1)
        defer { metrics.jobsInFlight.add(-1) }
        let accepted: AcceptedJob
        switch intake.accept(message.body, publishedAt: message.timestamp, now: Date()) {
        case .deadLetter(let reason):
            logger.warning("job dead-lettered", ["reason": .string(reason.description), "message_id": .string(message.messageID ?? "")])
            await settle(message, followUps: [.deadLetter(reason, retry: nil)], document: nil, results: [], refused: true)
            return
        case .accepted(let job):
            accepted = job
        }
        if accepted.document.needsSplitting(chunkSize: lanes.chunkSize) {
            await split(accepted, message)
            return
        }
        let log = logger.with(["job_id": .string(accepted.job.jobID), "attempt": .int(accepted.attempt)])
        let results: [DeviceResult]
        do {
            results = try await processor.deliver(accepted)
        } catch {
            log.warning("device lookup failed; the job goes back to the queue", ["error": .string("\(error)")])
            // A dependency (the database) is down: back off briefly so the job does not
            // spin between the queue and this worker, then hand it back.
            try? await Task.sleep(for: .seconds(1))
            _ = await message.nack(requeue: true)
            metrics.jobsCompleted.increment("requeued")
            return
        }
        var followUps = planner.plan(results, for: accepted, now: Date())
        Self.log(results, followUps, to: log)
        var completed: JobCompletedEvent?
        switch await recordReport(results, followUps: followUps, for: accepted) {
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
        let confirmed = await settle(message, followUps: followUps, document: accepted.document, results: results, refused: false)
        if let completed, confirmed {
            // Only a crash before this line repeats the event (with the same message id).
            do { try await reports.markPublished(jobID: completed.jobID) } catch {
                log.warning("job.completed published but not marked; a redelivery may repeat it", ["error": .string("\(error)")])
            }
        }
    }

    /// True once the broker confirmed every follow-up (whether or not the ack then reached it).
    @discardableResult
    private func settle(_ message: QueueMessage, followUps: [FollowUp], document: JobDocument?, results: [DeviceResult], refused: Bool) async -> Bool {
        if !followUps.isEmpty {
            let source = JobMessage(message)
            let requests = followUps.map { $0.publishRequest(topology: topology, message: source, document: document) }
            let confirmations = await publisherConnection.publish(requests)
            let failures = confirmations.compactMap { result -> QueueError? in
                if case .failure(let error) = result { return error }
                return nil
            }
            if let first = failures.first {
                logger.warning("follow-ups not confirmed; the job goes back to the queue",
                               ["failed": .int(failures.count), "error": .string(first.description)])
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
        metrics.record(results, followUps: followUps)
        metrics.jobsCompleted.increment(refused ? "dead_lettered" : "acked")
        return true
    }
}
