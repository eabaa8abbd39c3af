import Foundation
import PushModel
import PushQueue
import PushRuntime

/// `pushd worker`'s consuming loop: jobs in, follow-ups confirmed, then acked.
///
/// At least once, nothing lost: a job is acked only after every event, retry and dead
/// letter it caused has been confirmed by the broker; if any publish fails the job is put
/// back and processed again (the collapse id makes the second push replace the first on
/// the phone). A worker killed at any point leaves its unacked jobs to the broker, which
/// hands them to another worker.
public final class WorkerService: Service {
    public let name = "worker"
    private let consumerConnection: AMQPConnection
    private let publisherConnection: AMQPConnection
    private let intake: JobIntake
    private let processor: JobProcessor
    private let planner: FollowUpPlanner
    private let topology: Topology
    private let prefetch: UInt16
    private let metrics: WorkerMetrics
    private let logger: Logger

    init(
        consumerConnection: AMQPConnection, publisherConnection: AMQPConnection, intake: JobIntake, processor: JobProcessor,
        planner: FollowUpPlanner, topology: Topology, prefetch: UInt16, metrics: WorkerMetrics, logger: Logger
    ) {
        self.consumerConnection = consumerConnection
        self.publisherConnection = publisherConnection
        self.intake = intake
        self.processor = processor
        self.planner = planner
        self.topology = topology
        self.prefetch = prefetch
        self.metrics = metrics
        self.logger = logger
    }

    /// Consumes the producers' jobs queue and the workers' retries queue until `shutdown`,
    /// then stops taking jobs, finishes those in flight (their follow-ups confirmed and acks
    /// sent) and returns.
    public func run(shutdown: ShutdownSignal) async throws {
        let queues = [topology.jobsQueue, topology.retriesQueue]
        var consumers: [QueueConsumer] = []
        for queue in queues {
            consumers.append(try await consumerConnection.consume(queue: queue, prefetch: prefetch))
        }
        logger.info("worker consuming", ["queues": .string(queues.joined(separator: ",")), "prefetch": .int(Int(prefetch))])
        let stopper = Task { [consumers] in
            await shutdown.wait()
            logger.info("worker draining: no new jobs, finishing those in flight")
            for consumer in consumers { await consumer.cancel() }
        }
        defer { stopper.cancel() }
        let all = consumers
        let failure = await withTaskGroup(of: (any Error)?.self) { group -> (any Error)? in
            for consumer in all {
                let source: JobIntake.Source = consumer.queue == topology.retriesQueue ? .retries : .producers
                group.addTask { [all] in
                    await withTaskGroup(of: Void.self) { jobs -> (any Error)? in
                        var failure: (any Error)?
                        do {
                            for try await message in consumer {
                                jobs.addTask { await self.handle(message, source: source) }
                            }
                        } catch {
                            failure = error
                            // One consumer failing stops the other: the service fails as a whole.
                            for other in all where other.consumerTag != consumer.consumerTag { await other.cancel() }
                        }
                        await jobs.waitForAll()
                        return failure
                    }
                }
            }
            var first: (any Error)?
            for await failure in group where first == nil { first = failure }
            return first
        }
        if let failure, !shutdown.isTriggered { throw failure }
        logger.info("worker drained")
    }

    /// Intake, delivery, planning, then settlement: follow-ups confirmed, then the ack, then
    /// the metrics (a job that goes back to the queue is counted when it is settled for good).
    private func handle(_ message: QueueMessage, source: JobIntake.Source) async {
        metrics.jobsConsumed.increment()
        metrics.jobsInFlight.add(1)
        defer { metrics.jobsInFlight.add(-1) }
        let accepted: AcceptedJob
        switch intake.accept(message.body, publishedAt: message.timestamp, now: Date(), source: source) {
        case .deadLetter(let reason):
            logger.warning("job dead-lettered", ["reason": .string(reason.description), "message_id": .string(message.messageID ?? "")])
            await settle(message, followUps: [.deadLetter(reason, retry: nil)], document: nil, results: [], refused: true)
            return
        case .accepted(let job):
            accepted = job
        }
        let log = logger.with(["job_id": .string(accepted.job.jobID), "attempt": .int(accepted.attempt)])
        if accepted.hasExpired(now: Date()) {
            // Too late to be of use: not sent, counted, and said why.
            log.info("job expired before delivery; not sent", ["reason": .string("expires_at has passed")])
            _ = await message.ack()
            metrics.jobsCompleted.increment("expired")
            return
        }
        let results: [DeviceResult]
        do {
            results = try await processor.deliver(accepted)
        } catch {
            switch error {
            case .cancelled:
                log.warning("worker stopping before every device was attempted; the job goes back to the queue")
            case .lookup(let cause):
                log.warning("device lookup failed; the job goes back to the queue", ["error": .string("\(cause)")])
                // A dependency (the database) is down: back off briefly so the job does not
                // spin between the queue and this worker, then hand it back.
                try? await Task.sleep(for: .seconds(1))
            }
            _ = await message.nack(requeue: true)
            metrics.jobsCompleted.increment("requeued")
            return
        }
        let followUps = planner.plan(results, for: accepted, now: Date())
        Self.log(results, followUps, to: log)
        await settle(message, followUps: followUps, document: accepted.document, results: results, refused: false)
    }

    private func settle(_ message: QueueMessage, followUps: [FollowUp], document: JobDocument?, results: [DeviceResult], refused: Bool) async {
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
                return
            }
        }
        _ = await message.ack()
        metrics.record(results, followUps: followUps)
        metrics.jobsCompleted.increment(refused ? "dead_lettered" : "acked")
    }
}
