import Foundation
@testable import PushDelivery
import Synchronization
import Testing

/// How a first attempt settles, for device pushes and broadcasts alike (`APNsClient.settle`):
/// a lost connection is resent at once, and an `ExpiredProviderToken`, whether answered to
/// the first attempt or to that resend, is renewed and tried again, or waits for a retry tier.
@Suite("APNs: resends and expired provider tokens")
struct ProviderTokenSettleTests {
    static let expired = DeliveryOutcome.configurationError(reason: "ExpiredProviderToken", status: 403)

    /// A client whose token clock the test moves; no request is ever sent (`resend` answers).
    static func client(_ clock: ManualClock) throws -> APNsClient {
        try APNsClient(
            configuration: .init(teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: try TestCredentials.p8(), baseURLOverride: "https://both"),
            now: { clock.now })
    }

    @Test("a resend after a lost connection that meets an expired token is retried with a renewed one")
    func resendMeetsExpiredToken() async throws {
        let clock = ManualClock()
        let client = try Self.client(clock)
        let bearer = try client.tokens.bearer()
        clock.advance(minutes: 21)  // old enough to renew (the 20-minute rule)
        let used = Mutex<[String]>([])
        let lost = Attempt(outcome: .retryLater(reason: "connection lost", retryAfter: nil), connectionLost: true)
        let outcome = await client.settle(lost, bearer: bearer) { token in
            used.withLock { $0.append(token.token) }
            return Attempt(outcome: token == bearer ? Self.expired : .delivered(id: "ok"), connectionLost: false)
        }
        #expect(outcome == .delivered(id: "ok"))
        let tokens = used.withLock { $0 }
        #expect(tokens.count == 2 && tokens[0] == bearer.token && tokens[1] != bearer.token)
    }

    @Test("an expired token that cannot be renewed yet, or is refused again, waits for a retry tier: never dropped")
    func expiredTokenWaits() async throws {
        let clock = ManualClock()
        let client = try Self.client(clock)
        let bearer = try client.tokens.bearer()
        let first = Attempt(outcome: Self.expired, connectionLost: false)
        let tooSoon = await client.settle(first, bearer: bearer) { _ in Attempt(outcome: .delivered(id: nil), connectionLost: false) }
        #expect(tooSoon.label == "retry", "\(tooSoon)")
        clock.advance(minutes: 21)
        let refusedAgain = await client.settle(first, bearer: bearer) { _ in Attempt(outcome: Self.expired, connectionLost: false) }
        #expect(refusedAgain.label == "retry", "\(refusedAgain)")
        let lostThenExpired = await client.settle(
            Attempt(outcome: .retryLater(reason: "lost", retryAfter: nil), connectionLost: true), bearer: try client.tokens.bearer()
        ) { _ in Attempt(outcome: Self.expired, connectionLost: false) }
        #expect(lostThenExpired.label == "retry", "\(lostThenExpired)")
    }

    @Test("a broadcast goes to its environment's own host, as a device push does")
    func broadcastURL() throws {
        var configuration = APNsClient.Configuration(
            teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: try TestCredentials.p8(), baseURLOverride: "https://both")
        configuration = configuration.withEnvironmentURLs(production: nil, sandbox: "https://sandbox")
        let client = try APNsClient(configuration: configuration)
        let sandbox = APNsBroadcast(bundleID: "com.example.app", channelID: "Y2hhbm5lbA==", environment: .sandbox, payload: [])
        var production = sandbox
        production.environment = .production
        #expect(client.url(for: sandbox) == "https://sandbox/4/broadcasts/apps/com.example.app")
        #expect(client.url(for: production) == "https://both/4/broadcasts/apps/com.example.app")
    }
}
