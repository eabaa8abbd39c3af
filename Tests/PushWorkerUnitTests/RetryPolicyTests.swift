import Foundation
@testable import PushWorker
import Testing

@Suite("Retry policy")
struct RetryPolicyTests {
    let now = Fixtures.now

    @Test("attempt n waits in tier n, then stays in the last tier")
    func tiers() {
        let policy = Fixtures.policy(maximumAttempts: 10)
        let names = (1...5).map { attempts -> String? in
            guard case .retry(let tier, let attempt) = policy.decide(
                attemptsSoFar: attempts, firstAttemptAt: now, expiresAt: nil, retryAfter: nil, now: now)
            else { return nil }
            #expect(attempt == attempts + 1)
            return tier.name
        }
        #expect(names == ["30s", "2m", "2m", "2m", "2m"])
        #expect(policy.decide(attemptsSoFar: 0, firstAttemptAt: now, expiresAt: nil, retryAfter: nil, now: now)
            == .retry(tier: Fixtures.tiers[0], attempt: 1))
    }

    @Test("Retry-After picks the first tier at least that long, or the last")
    func retryAfter() {
        let policy = Fixtures.policy()
        #expect(policy.decide(attemptsSoFar: 1, firstAttemptAt: now, expiresAt: nil, retryAfter: .seconds(60), now: now)
            == .retry(tier: Fixtures.tiers[2], attempt: 2))
        #expect(policy.decide(attemptsSoFar: 1, firstAttemptAt: now, expiresAt: nil, retryAfter: .seconds(3), now: now)
            == .retry(tier: Fixtures.tiers[1], attempt: 2))
        #expect(policy.decide(attemptsSoFar: 1, firstAttemptAt: now, expiresAt: nil, retryAfter: .seconds(9999), now: now)
            == .retry(tier: Fixtures.tiers[2], attempt: 2))
    }

    @Test("gives up after the maximum attempts, past the maximum age, or when the job expires first")
    func givingUp() {
        let policy = Fixtures.policy(maximumAttempts: 3, maximumAge: .seconds(600))
        #expect(policy.decide(attemptsSoFar: 3, firstAttemptAt: now, expiresAt: nil, retryAfter: nil, now: now)
            == .giveUp(.attemptsExhausted(3)))
        #expect(policy.decide(attemptsSoFar: 1, firstAttemptAt: now.addingTimeInterval(-601), expiresAt: nil, retryAfter: nil, now: now)
            == .giveUp(.tooOld(ageSeconds: 601, maximumSeconds: 600)))
        #expect(policy.decide(attemptsSoFar: 1, firstAttemptAt: now, expiresAt: now.addingTimeInterval(20), retryAfter: nil, now: now)
            == .giveUp(.expiresBeforeNextAttempt))
        #expect(policy.decide(attemptsSoFar: 1, firstAttemptAt: now, expiresAt: now.addingTimeInterval(31), retryAfter: nil, now: now)
            == .retry(tier: Fixtures.tiers[1], attempt: 2))
        let empty = RetryPolicy(maximumAttempts: 3, maximumAge: .seconds(600), tiers: [])
        #expect(empty.decide(attemptsSoFar: 1, firstAttemptAt: now, expiresAt: nil, retryAfter: nil, now: now) == .giveUp(.noTiers))
    }

    @Test("the give-up reasons read as the dead letter's x-pushd-reason")
    func reasons() {
        #expect(RetryPolicy.GiveUp.attemptsExhausted(4).description == "gave up after 4 attempts")
        #expect(RetryPolicy.GiveUp.tooOld(ageSeconds: 700, maximumSeconds: 600).description == "gave up: the job is 700 s old (maximum 600 s)")
        #expect(DeadLetterReason.retriesExhausted(.expiresBeforeNextAttempt).cause == "retries_exhausted")
    }
}
