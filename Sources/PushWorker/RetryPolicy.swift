import Foundation
import PushQueue

/// When and where a job goes for another try, and when it stops trying.
///
/// Attempt n waits in the n-th retry tier (5 s, 30 s, 2 min, 10 min, 1 h, then 1 h again),
/// or in the first tier at least as long as the longest `Retry-After` the services asked
/// for. A job older than `maximumAge`, past its own expiry, or tried `maximumAttempts`
/// times goes to the dead-letter queue instead, with the reason.
struct RetryPolicy: Sendable {
    var maximumAttempts: Int
    var maximumAge: Duration
    var tiers: [Topology.RetryTier]

    enum Decision: Sendable, Equatable {
        case retry(tier: Topology.RetryTier, attempt: Int)
        case giveUp(GiveUp)
    }

    /// Why the policy stopped; the description is the dead letter's `x-pushd-reason`.
    enum GiveUp: Sendable, Equatable, CustomStringConvertible {
        case attemptsExhausted(Int)
        case tooOld(ageSeconds: Int, maximumSeconds: Int64)
        case expiresBeforeNextAttempt
        /// A retry that waited in its queue past the job's expiry: not sent.
        case expiredBeforeAttempt
        case noTiers

        var description: String {
            switch self {
            case .attemptsExhausted(let attempts): "gave up after \(attempts) attempts"
            case .tooOld(let age, let maximum): "gave up: the job is \(age) s old (maximum \(maximum) s)"
            case .expiresBeforeNextAttempt: "gave up: the job expires before the next attempt"
            case .expiredBeforeAttempt: "gave up: the job expired before this attempt; nothing was sent"
            case .noTiers: "no retry tiers configured"
            }
        }
    }

    func decide(attemptsSoFar: Int, firstAttemptAt: Date, expiresAt: Date?, retryAfter: Duration?, now: Date) -> Decision {
        if attemptsSoFar >= maximumAttempts {
            return .giveUp(.attemptsExhausted(attemptsSoFar))
        }
        let age = now.timeIntervalSince(firstAttemptAt)
        if age >= TimeInterval(maximumAge.components.seconds) {
            return .giveUp(.tooOld(ageSeconds: Int(age), maximumSeconds: maximumAge.components.seconds))
        }
        guard let last = tiers.last else { return .giveUp(.noTiers) }
        var tier = tiers[min(attemptsSoFar, tiers.count - 1)]
        if let retryAfter, retryAfter > tier.delay {
            tier = tiers.first { $0.delay >= retryAfter } ?? last
        }
        if let expiresAt, now.addingTimeInterval(TimeInterval(tier.delay.components.seconds)) >= expiresAt {
            return .giveUp(.expiresBeforeNextAttempt)
        }
        return .retry(tier: tier, attempt: attemptsSoFar + 1)
    }
}
