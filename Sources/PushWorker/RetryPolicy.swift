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

    enum Decision: Equatable {
        case retry(tier: Topology.RetryTier, attempt: Int)
        case giveUp(reason: String)
    }

    func decide(attemptsSoFar: Int, firstAttemptAt: Date, expiresAt: Date?, retryAfter: Duration?, now: Date = Date()) -> Decision {
        let nextAttempt = attemptsSoFar + 1
        if attemptsSoFar >= maximumAttempts {
            return .giveUp(reason: "gave up after \(attemptsSoFar) attempts")
        }
        let age = now.timeIntervalSince(firstAttemptAt)
        if age >= TimeInterval(maximumAge.components.seconds) {
            return .giveUp(reason: "gave up: the job is \(Int(age)) s old (maximum \(maximumAge.components.seconds) s)")
        }
        guard let first = tiers.first else { return .giveUp(reason: "no retry tiers configured") }
        var tier = tiers[min(attemptsSoFar, tiers.count - 1)]
        if let retryAfter, retryAfter > tier.delay {
            tier = tiers.first { $0.delay >= retryAfter } ?? tiers.last ?? first
        }
        if let expiresAt, now.addingTimeInterval(TimeInterval(tier.delay.components.seconds)) >= expiresAt {
            return .giveUp(reason: "gave up: the job expires before the next attempt")
        }
        return .retry(tier: tier, attempt: nextAttempt)
    }
}
