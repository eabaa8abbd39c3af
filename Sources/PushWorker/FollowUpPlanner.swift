import Foundation
import PushModel

/// Outcomes in, follow-ups out: `token.invalid`/`key.invalid` events, one retry job for the
/// devices worth another try, or a dead letter for those out of tries.
///
/// Pure (the retry policy and `now` are given; only event ids are random), so the rules are
/// unit-tested without servers. Encoding to publish requests happens elsewhere, once
/// (`FollowUp+Publish.swift`).
struct FollowUpPlanner: Sendable {
    let retryPolicy: RetryPolicy

    /// - Parameter expired: the message came past the job's expiry: its devices were not
    ///   sent to (`JobProcessor.deliver`). A retry's are given up on, as when the policy gives
    ///   up; a first attempt's (a producer's job, a chunk) are the job's own expiry: nothing.
    func plan(_ results: [DeviceResult], for accepted: AcceptedJob, now: Date, expired: Bool = false) -> [FollowUp] {
        var followUps: [FollowUp] = []
        var retryDevices: [Int64] = []
        var longestRetryAfter: Duration?
        let jobID = accepted.job.jobID

        for result in results {
            switch result.outcome {
            case .sent(.invalidToken(let reason, let invalidSince)):
                followUps.append(.tokenInvalid(TokenInvalidEvent(
                    device: result.device, reason: reason, invalidSince: invalidSince, jobID: jobID, occurredAt: now)
                    .naming(accepted.job.liveActivity, platform: result.device.platform)))
            case .sent(.retryLater(_, let retryAfter)):
                retryDevices.append(result.device.id)
                if let retryAfter, retryAfter > (longestRetryAfter ?? .zero) { longestRetryAfter = retryAfter }
            case .expired:
                retryDevices.append(result.device.id)
            case .keyInvalid(let error):
                followUps.append(.keyInvalid(KeyInvalidEvent(
                    device: result.device, reason: error.description, jobID: jobID, occurredAt: now)))
            case .sent(.delivered), .sent(.rejected), .sent(.configurationError), .sealingFailed, .skipped:
                break
            }
        }
        guard !retryDevices.isEmpty, !expired || accepted.job.retry != nil else { return followUps }
        // A broadcast has no device (its stand-in has id 0): its retry names none.
        let retryIDs = retryDevices.filter { $0 > 0 }
        // Bounded retry bodies: at most `maximumRetryDevices` ids each (one empty group for a
        // broadcast).
        let retryGroups = retryIDs.isEmpty ? [[]] : Self.chunks(retryIDs)

        let attempts = accepted.attempt
        let decision: RetryPolicy.Decision = expired ? .giveUp(.expiredBeforeAttempt) : retryPolicy.decide(
            attemptsSoFar: attempts, firstAttemptAt: accepted.firstAttemptAt, expiresAt: accepted.expiresAt,
            retryAfter: longestRetryAfter, now: now)
        switch decision {
        case .retry(let tier, let attempt):
            for chunk in retryGroups {
                let state = NotificationJob.RetryState(attempt: attempt, firstAttemptAt: accepted.firstAttemptAt, deviceIDs: chunk)
                followUps.append(.retry(state, tier: tier))
            }
        case .giveUp(let why):
            for chunk in retryGroups {
                let state = NotificationJob.RetryState(attempt: attempts, firstAttemptAt: accepted.firstAttemptAt, deviceIDs: chunk)
                followUps.append(.deadLetter(.retriesExhausted(why), retry: state))
            }
        }
        return followUps
    }

    /// Retry state is bounded per message (`NotificationJob.maximumRetryDevices` ids), so a
    /// retry's body stays within what intake accepts however many devices failed.
    static func chunks(_ ids: [Int64]) -> [[Int64]] {
        stride(from: 0, to: ids.count, by: NotificationJob.maximumRetryDevices).map {
            Array(ids[$0..<min($0 + NotificationJob.maximumRetryDevices, ids.count)])
        }
    }
}
