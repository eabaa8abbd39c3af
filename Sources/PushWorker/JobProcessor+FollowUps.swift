import Foundation
import PushDelivery
import PushModel
import PushQueue
import PushRuntime
import PushStore

extension JobProcessor {
    /// Counts and logs every outcome, and turns them into the messages that must be
    /// confirmed before the job is acked: `token.invalid`/`key.invalid` events, one retry
    /// job for the devices worth another try, and a dead letter for those out of tries.
    func followUps(for outcomes: [DeviceOutcome], context: JobContext, message: QueueMessage, logger: Logger) -> JobResult {
        var publishes: [PublishRequest] = []
        var retryDevices: [Int64] = []
        var longestRetryAfter: Duration?
        var problems: [String: Int] = [:]
        var counts: [String: Int] = [:]
        let jobID = context.job.jobID

        for result in outcomes {
            let device = result.device
            let label = result.keyProblem == nil ? result.outcome.label : "key_invalid"
            metrics.deliveries.increment(device.platform.rawValue, label)
            counts[label, default: 0] += 1
            switch result.outcome {
            case .delivered:
                break
            case .invalidToken(let reason, let invalidSince):
                let event = WorkerEvent.tokenInvalid(device: device, reason: reason, invalidSince: invalidSince, jobID: jobID)
                publishes.append(self.event(event, mandatory: true))
                logger.info("token invalid", ["device_id": .int(Int(device.id)), "token": .string(Redact.token(device.token)), "reason": .string(reason)])
            case .retryLater(let reason, let retryAfter):
                retryDevices.append(device.id)
                if let retryAfter, retryAfter > (longestRetryAfter ?? .zero) { longestRetryAfter = retryAfter }
                problems["retry: \(reason)", default: 0] += 1
            case .rejected(let reason, _), .configurationError(let reason, _):
                if let keyProblem = result.keyProblem {
                    let event = WorkerEvent.keyInvalid(device: device, reason: keyProblem.description, jobID: jobID)
                    // Nobody may listen for key.invalid yet: not mandatory, so it is never
                    // reported back as unroutable.
                    publishes.append(self.event(event, mandatory: false))
                }
                problems["\(result.outcome.label): \(reason)", default: 0] += 1
            }
        }
        for (problem, count) in problems.sorted(by: { $0.key < $1.key }) {
            logger.warning("push not delivered", ["problem": .string(problem), "devices": .int(count)])
        }

        if !retryDevices.isEmpty {
            let attempts = context.job.retry?.attempt ?? 1
            switch retryPolicy.decide(
                attemptsSoFar: attempts, firstAttemptAt: context.firstAttemptAt, expiresAt: context.expiresAt,
                retryAfter: longestRetryAfter)
            {
            case .retry(let tier, let attempt):
                if let body = Self.rewrite(message.body, retry: (attempt, context.firstAttemptAt, retryDevices)) {
                    publishes.append(PublishRequest(
                        exchange: topology.retryExchange, routingKey: tier.name,
                        message: OutgoingMessage(body: body, contentType: "application/json", messageID: "\(jobID)#\(attempt)")))
                    metrics.retries.increment(tier.name)
                    logger.info("retry scheduled", ["devices": .int(retryDevices.count), "tier": .string(tier.name), "next_attempt": .int(attempt)])
                }
            case .giveUp(let reason):
                if let body = Self.rewrite(message.body, retry: (attempts, context.firstAttemptAt, retryDevices)) {
                    publishes.append(deadLetter(body: body, reason: reason, message: message))
                    metrics.deadLetters.increment("retries_exhausted")
                    logger.warning("retries exhausted; dead-lettered", ["devices": .int(retryDevices.count), "reason": .string(reason)])
                }
            }
        }
        logger.info("job processed", counts.mapValues { Logger.Value.int($0) }.merging(["devices": .int(outcomes.count)]) { $1 })
        return JobResult(settlement: .ack, publishes: publishes)
    }

    private func event(_ event: WorkerEvent.Message, mandatory: Bool) -> PublishRequest {
        metrics.eventsPublished.increment(event.routingKey)
        return PublishRequest(
            exchange: topology.eventsExchange, routingKey: event.routingKey,
            message: OutgoingMessage(body: event.body, contentType: "application/json", messageID: event.eventID),
            mandatory: mandatory)
    }

    /// A dead letter: the job (or what is left of it) with the reason in `x-pushd-reason`.
    func deadLetter(body: [UInt8], reason: String, message: QueueMessage) -> PublishRequest {
        var headers = message.headers
        headers["x-pushd-reason"] = .string(String(reason.prefix(1000)))
        headers["x-pushd-original-queue"] = .string(message.queue)
        return PublishRequest(
            exchange: topology.deadExchange, routingKey: "dead",
            message: OutgoingMessage(body: body, contentType: "application/json", messageID: message.messageID, headers: headers))
    }

    /// The job as received, with its `retry` state replaced: unknown producer fields survive.
    static func rewrite(_ body: [UInt8], retry: (attempt: Int, firstAttemptAt: Date, deviceIDs: [Int64])) -> [UInt8]? {
        guard var object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        object["retry"] = [
            "attempt": retry.attempt,
            "first_attempt_at": RFC3339.string(from: retry.firstAttemptAt),
            "device_ids": retry.deviceIDs,
        ] as [String: Any]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return nil }
        return [UInt8](data)
    }
}
