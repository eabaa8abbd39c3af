import PushQueue
import PushModel

extension WorkerMetrics {
    /// Counts a settled job's pushes and follow-ups. Called once, after the broker confirmed
    /// every follow-up and the job was acked: a job put back in the queue is counted only
    /// when it is settled for good.
    func record(_ report: DeliveryReport, followUps: [FollowUp]) {
        for (platform, count) in report.delivered {
            deliveries.increment(by: Double(count), platform.rawValue, "delivered")
        }
        record(report.results, followUps: followUps)
    }

    func record(_ results: [DeviceResult], followUps: [FollowUp]) {
        for result in results {
            if case .skipped(let skip) = result.outcome {
                liveActivitySkipped.increment(skip.reason.rawValue, skip.event.rawValue)
                continue
            }
            // Nothing was sent: the job's `expired` count says it.
            if case .expired = result.outcome { continue }
            deliveries.increment(result.device.platform.rawValue, result.outcome.label)
        }
        for followUp in followUps {
            switch followUp {
            case .retry(_, let tier): retries.increment(tier.name)
            case .tokenInvalid: eventsPublished.increment(Topology.tokenInvalidRoutingKey)
            case .keyInvalid: eventsPublished.increment(Topology.keyInvalidRoutingKey)
            case .jobCompleted: eventsPublished.increment(JobCompletedEvent.name)
            case .deadLetter(let reason, _): deadLetters.increment(reason.cause)
            }
        }
    }
}
