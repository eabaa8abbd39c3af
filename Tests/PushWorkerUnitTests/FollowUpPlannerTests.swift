import Foundation
import PushCrypto
import PushDelivery
import PushModel
@testable import PushWorker
import Testing

@Suite("Follow-up planner")
struct FollowUpPlannerTests {
    let planner = FollowUpPlanner(retryPolicy: Fixtures.policy(maximumAttempts: 3))

    func result(_ id: Int64, _ outcome: DeviceOutcome, platform: Platform = .ios) -> DeviceResult {
        DeviceResult(device: Fixtures.device(id, platform: platform), outcome: outcome)
    }

    @Test("delivered, rejected and misconfigured devices cause nothing")
    func quiet() throws {
        let results = [
            result(1, .sent(.delivered(id: "a"))), result(2, .sent(.rejected(reason: "BadTopic", status: 400))),
            result(3, .sent(.configurationError(reason: "InvalidProviderToken", status: 403))), result(4, .sealingFailed("openssl")),
        ]
        #expect(planner.plan(results, for: try Fixtures.accepted(), now: Fixtures.now).isEmpty)
    }

    @Test("a dead token becomes a token.invalid event for that device, with APNs's timestamp")
    func tokenInvalid() throws {
        let since = Date(timeIntervalSince1970: 1_700_000_000)
        let plan = planner.plan(
            [result(7, .sent(.invalidToken(reason: "Unregistered", invalidSince: since)))], for: try Fixtures.accepted(), now: Fixtures.now)
        guard plan.count == 1, case .tokenInvalid(let event) = plan[0] else { Issue.record("\(plan)"); return }
        #expect(event.deviceID == 7)
        #expect(event.token == "token-7")
        #expect(event.reason == "Unregistered")
        #expect(event.invalidSince == since)
        #expect(event.jobID == "job-1")
        #expect(event.occurredAt == Fixtures.now)
    }

    @Test("a bad key is an outcome of its own: a key.invalid event, no retry")
    func keyInvalid() throws {
        let plan = planner.plan([result(8, .keyInvalid(.tooSmall(bits: 1024)))], for: try Fixtures.accepted(), now: Fixtures.now)
        guard plan.count == 1, case .keyInvalid(let event) = plan[0] else { Issue.record("\(plan)"); return }
        #expect(event.deviceID == 8)
        #expect(event.keyID == "kid-8")
        #expect(event.reason == PublicKeyError.tooSmall(bits: 1024).description)
    }

    @Test("devices to retry go into one retry job, in the tier of the longest Retry-After")
    func retry() throws {
        let results = [
            result(1, .sent(.retryLater(reason: "ServiceUnavailable", retryAfter: .seconds(20)))),
            result(2, .sent(.delivered(id: nil))),
            result(3, .sent(.retryLater(reason: "UNAVAILABLE", retryAfter: .seconds(60))), platform: .android),
        ]
        let accepted = try Fixtures.accepted(publishedAt: 1_799_999_990)
        let plan = planner.plan(results, for: accepted, now: Fixtures.now)
        let expected = NotificationJob.RetryState(attempt: 2, firstAttemptAt: accepted.firstAttemptAt, deviceIDs: [1, 3])
        #expect(plan == [.retry(expected, tier: Fixtures.tiers[2])])
    }

    @Test("devices out of tries are dead-lettered with the reason and their retry state")
    func exhausted() throws {
        let accepted = try Fixtures.accepted(
            Fixtures.jobJSON(retry: #"{"attempt":3,"first_attempt_at":"2027-01-15T08:00:00Z","device_ids":[1,2]}"#))
        let plan = planner.plan(
            [result(1, .sent(.retryLater(reason: "timeout", retryAfter: nil))), result(2, .sent(.delivered(id: nil)))],
            for: accepted, now: Fixtures.now)
        let state = NotificationJob.RetryState(attempt: 3, firstAttemptAt: accepted.firstAttemptAt, deviceIDs: [1])
        #expect(plan == [.deadLetter(.retriesExhausted(.attemptsExhausted(3)), retry: state)])
    }

    @Test("events and the retry come together from one mixed job")
    func mixed() throws {
        let results = [
            result(1, .sent(.invalidToken(reason: "UNREGISTERED", invalidSince: nil)), platform: .android),
            result(2, .keyInvalid(.notRSA(algorithm: "EC"))),
            result(3, .sent(.retryLater(reason: "IdleTimeout", retryAfter: nil))),
        ]
        let plan = planner.plan(results, for: try Fixtures.accepted(), now: Fixtures.now)
        #expect(plan.count == 3)
        #expect(plan.contains { if case .retry(let state, let tier) = $0 { state.deviceIDs == [3] && tier.name == "30s" } else { false } })
        #expect(plan.contains { if case .tokenInvalid(let event) = $0 { event.platform == .android } else { false } })
        #expect(plan.contains { if case .keyInvalid(let event) = $0 { event.deviceID == 2 } else { false } })
    }
}
