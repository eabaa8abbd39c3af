import PushRuntime

extension WorkerService {
    /// One job's outcome in the log: problems grouped by reason, dead tokens shortened,
    /// retries and dead letters, then a summary. Never plaintext, never a whole token.
    static func log(_ report: DeliveryReport, _ followUps: [FollowUp], to logger: Logger) {
        var problems: [String: Int] = [:]
        var counts: [String: Int] = [:]
        let delivered = report.delivered.values.reduce(0, +)
        if delivered > 0 { counts["delivered"] = delivered }
        for result in report.results {
            counts[result.outcome.label, default: 0] += 1
            if let problem = result.outcome.problem { problems[problem, default: 0] += 1 }
            if case .sent(.invalidToken(let reason, _)) = result.outcome {
                logger.info("token invalid", [
                    "device_id": .int(Int(result.device.id)), "token": .string(Redact.token(result.device.token)), "reason": .string(reason),
                ])
            }
        }
        for (problem, count) in problems.sorted(by: { $0.key < $1.key }) {
            logger.warning("push not delivered", ["problem": .string(problem), "devices": .int(count)])
        }
        for followUp in followUps {
            switch followUp {
            case .retry(let state, let tier):
                logger.info("retry scheduled", ["devices": .int(state.deviceIDs.count), "tier": .string(tier.name), "next_attempt": .int(state.attempt)])
            case .deadLetter(let reason, let state):
                logger.warning("retries exhausted; dead-lettered", ["devices": .int(state?.deviceIDs.count ?? 0), "reason": .string(reason.description)])
            case .tokenInvalid, .keyInvalid, .jobCompleted:
                break
            }
        }
        logger.info("job processed", counts.mapValues { Logger.Value.int($0) }.merging(["devices": .int(report.deviceCount)]) { $1 })
    }
}
