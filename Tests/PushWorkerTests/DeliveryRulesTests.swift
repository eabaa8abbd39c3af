import Foundation
import PushModel
import PushTestSupport
import Testing

/// Provider and protocol edges: a refused token renewal, expiry, "now or never", shutdown.
@Suite("Delivery rules at the edges", .serialized)
struct DeliveryRulesTests {
    static func iosToken(_ prefix: String) -> String { TokenHygieneTests.iosToken(prefix) }

    @Test("ExpiredProviderToken that a renewal cannot fix yet is retried later and delivered, never dropped")
    func expiredProviderTokenRetried() async throws {
        try await WorkerFixture.run(apnsRules: [["prefix": "e4e0", "reason": "ExpiredProviderToken", "fail_times": 2]]) { fixture in
            let recipient = "\(fixture.prefix)-jwt"
            let token = Self.iosToken("e4e0")
            _ = try await fixture.registry.register(.init(
                recipientID: recipient, platform: .ios, appID: fixture.bundleID, environment: .production, token: token,
                publicKey: fixture.publicKeys[0]))
            let worker = try fixture.startWorker()
            _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-jwt-job", recipients: [recipient], title: "Secret"))
            let delivered = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.received().contains { $0.token == token }
            }
            #expect(delivered, "\(worker.log.suffix(2000))")
            #expect(worker.log.contains("retry scheduled"))
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a job past its expires_at is not sent (counted, with the reason); ttl_seconds 0 sends apns-expiration 0")
    func expiry() async throws {
        try await WorkerFixture.run { fixture in
            let devices = try await fixture.registerRecipients(2, mix: { _, _ in .normal })
            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            let worker = try fixture.startWorker()
            var expired = fixture.job(id: "\(fixture.prefix)-expired", recipients: [recipients[0]], title: "Secret")
            expired["delivery"] = ["expires_at": Int(Date().timeIntervalSince1970) - 60]
            _ = try await fixture.publish(expired)
            let onceID = "\(fixture.prefix)-once"
            var once = fixture.job(id: onceID, recipients: [recipients[1]], title: "Secret")
            once["delivery"] = ["ttl_seconds": 0]
            _ = try await fixture.publish(once)
            let done = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.received().count >= 4 && worker.log.contains("job expired before delivery")
            }
            #expect(done, "\(worker.log.suffix(2000))")
            let received = try await fixture.received()
            #expect(received.allSatisfy { $0.collapseID == onceID }, "nothing of the expired job was sent")
            for push in received where push.body["aps"] != nil {
                #expect(push.headers["apns-expiration"] as? String == "0")
            }
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a shutdown that times out mid-job never acks it: another worker delivers every device")
    func shutdownNeverAcksUnattempted() async throws {
        try await WorkerFixture.run(emulatorArguments: ["--slow-delay", "1"]) { fixture in
            let recipient = "\(fixture.prefix)-slow"
            var tokens: [String] = []
            for _ in 0..<12 {
                let token = Self.iosToken("5100")  // the emulator answers these after --slow-delay
                tokens.append(token)
                _ = try await fixture.registry.register(.init(
                    recipientID: recipient, platform: .ios, appID: fixture.bundleID, environment: .production, token: token,
                    publicKey: fixture.publicKeys[0]))
            }
            let limits = ["PUSHD_MAX_IN_FLIGHT": "2", "PUSHD_SHUTDOWN_TIMEOUT_SECONDS": "1", "PUSHD_MAX_DEVICES_PER_RECIPIENT": "20"]
            let first = try fixture.startWorker("first", environment: limits)
            _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-slow-job", recipients: [recipient], title: "Secret"))
            let started = try await waitUntil(timeout: .seconds(60), every: .milliseconds(50)) {
                try await fixture.received().count >= 1
            }
            #expect(started)
            _ = await first.terminate(timeout: .seconds(30))
            #expect(!first.log.contains("job processed"), "the first worker did not finish the job")
            let second = try fixture.startWorker("second")
            let all = try await waitUntil(timeout: .seconds(90), every: .milliseconds(100)) {
                Set(try await fixture.received().map(\.token)).isSuperset(of: tokens)
            }
            #expect(all, "every device got its push after the interrupted shutdown\n\(first.log.suffix(2000))")
            #expect(await second.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
