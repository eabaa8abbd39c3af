import Foundation
import PushCrypto
import PushDelivery
import PushModel
import PushTestSupport
import Testing

/// APNs and FCM clients against the shipped emulator: real HTTP/2 over TLS, JWT and OAuth2
/// checked by the emulator, its real error bodies classified.
@Suite("Delivery against the emulator", .serialized)
struct EmulatorDeliveryTests {
    static func hexToken(prefix: String = "", unique: Int = Int.random(in: 0..<Int.max)) -> String {
        let body = String(format: "%016llx", UInt64(unique)) + String(repeating: "ab", count: 24)
        return (prefix + body).prefix(64).lowercased()
    }

    static let payload = Array(#"{"aps":{"alert":{"title":"New message","body":"Open the app"},"mutable-content":1},"encrypted_data":"{}"}"#.utf8)

    func notification(_ token: String, collapseID: String? = nil) -> APNsNotification {
        APNsNotification(
            deviceToken: token, bundleID: EmulatorProcess.bundleID, environment: .production,
            expiration: 0, collapseID: collapseID, payload: Self.payload)
    }

    @Test("APNs: every outcome class the emulator can script")
    func apnsOutcomes() async throws {
        let emulator = try EmulatorProcess.start()
        let client = try APNsClient(configuration: emulator.apnsConfiguration())
        client.start()
        let delivered = await client.send(notification(Self.hexToken(), collapseID: "job-1"))
        guard case .delivered(let id) = delivered else {
            Issue.record("expected delivered, got \(delivered)")
            await client.shutdown(); await emulator.stop(); return
        }
        #expect(id?.count == 36)
        let unregistered = await client.send(notification(Self.hexToken(prefix: "410a")))
        guard case .invalidToken("Unregistered", let since?) = unregistered else {
            Issue.record("expected Unregistered with a timestamp, got \(unregistered)")
            await client.shutdown(); await emulator.stop(); return
        }
        #expect(abs(since.timeIntervalSinceNow) < 120)
        #expect(await client.send(notification(Self.hexToken(prefix: "410e"))) == .invalidToken(reason: "ExpiredToken", invalidSince: nil))
        #expect(await client.send(notification(Self.hexToken(prefix: "400b"))) == .invalidToken(reason: "BadDeviceToken", invalidSince: nil))
        #expect(await client.send(notification(Self.hexToken(prefix: "4290"))).label == "retry")
        #expect(await client.send(notification(Self.hexToken(prefix: "5000"))) == .retryLater(reason: "InternalServerError", retryAfter: nil))
        #expect(await client.send(notification(Self.hexToken(prefix: "5030"))).label == "retry")
        let flaky = Self.hexToken(prefix: "fa11")
        let firstTry = await client.send(notification(flaky))
        #expect(firstTry == .retryLater(reason: "ServiceUnavailable", retryAfter: .seconds(1)))
        _ = await client.send(notification(flaky))
        #expect(await client.send(notification(flaky)).label == "delivered", "a flaky token succeeds after its failures")
        // A topic the key may not push to: the request is wrong, the token is fine.
        var wrongTopic = notification(Self.hexToken())
        wrongTopic.bundleID = "com.not.configured"
        let topicOutcome = await client.send(wrongTopic)
        #expect(topicOutcome.label == "rejected", "\(topicOutcome)")
        // Local checks: never sent.
        #expect(await client.send(notification("not-hex")) == .invalidToken(reason: "BadDeviceToken", invalidSince: nil))
        #expect(await client.send(notification(Self.hexToken(), collapseID: String(repeating: "c", count: 65)))
            == .rejected(reason: "BadCollapseId", status: 400))

        // What the emulator recorded for the accepted push: our headers, verbatim.
        let pushes = try await emulator.pushes()
        let first = try #require(pushes.first)
        let text = String(describing: first)
        #expect(text.contains("job-1"), "collapse id recorded: \(text.prefix(400))")
        await client.shutdown()
        await emulator.stop()
    }

    @Test("APNs: a wrong signing key is a configuration error, not a prune")
    func apnsBadKey() async throws {
        let emulator = try EmulatorProcess.start()
        var configuration = emulator.apnsConfiguration()
        configuration.privateKeyPEM = try TestKeyMaterial.p256PrivateKeyPEM()
        let client = try APNsClient(configuration: configuration)
        client.start()
        #expect(await client.send(notification(Self.hexToken())) == .configurationError(reason: "InvalidProviderToken", status: 403))
        await client.shutdown()
        await emulator.stop()
    }

    @Test("APNs: 1,000 concurrent requests over one connection all delivered")
    func apnsConcurrency() async throws {
        let emulator = try EmulatorProcess.start()
        let client = try APNsClient(configuration: emulator.apnsConfiguration(http: .init(maximumConnectionsPerHost: 1)))
        client.start()
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<1000 {
                group.addTask { await client.send(notification(Self.hexToken(unique: index + 1))).label }
            }
            return await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(outcomes == ["delivered": 1000])
        let accepted = try await emulator.pushes()
        #expect(accepted.count == 1000)
        await client.shutdown()
        await emulator.stop()
    }

    func fcmBody(_ token: String) throws -> [UInt8] {
        let job = NotificationJob(
            jobID: "job-fcm", app: .init(fcmProjectID: EmulatorProcess.projectID), recipients: .deviceIDs([1]),
            content: nil, fallback: .init(title: "New message", message: "Open the app"))
        return try FCMMessageTemplate(job: job, priority: .high, collapseKey: "job-fcm", ttlSeconds: 60)
            .body(token: token, encryptedData: nil)
    }

    @Test("FCM: OAuth2 token, data message, and every outcome class")
    func fcmOutcomes() async throws {
        let emulator = try EmulatorProcess.start()
        let client = try FCMClient(configuration: emulator.fcmConfiguration())
        client.start()
        let delivered = await client.send(body: try fcmBody("device-token-1"))
        guard case .delivered(let name?) = delivered else {
            Issue.record("expected delivered, got \(delivered)")
            await client.shutdown(); await emulator.stop(); return
        }
        #expect(name.hasPrefix("projects/\(EmulatorProcess.projectID)/messages/"))
        #expect(await client.send(body: try fcmBody("unregistered-1")) == .invalidToken(reason: "UNREGISTERED", invalidSince: nil))
        #expect(await client.send(body: try fcmBody("invalid-1")) == .invalidToken(reason: "INVALID_ARGUMENT", invalidSince: nil))
        #expect(await client.send(body: try fcmBody("mismatch-1")) == .invalidToken(reason: "SENDER_ID_MISMATCH", invalidSince: nil))
        #expect(await client.send(body: try fcmBody("quota-1")) == .retryLater(reason: "QUOTA_EXCEEDED", retryAfter: .seconds(60)))
        #expect(await client.send(body: try fcmBody("unavailable-1")).label == "retry")
        #expect(await client.send(body: try fcmBody("internal-1")).label == "retry")
        let accepted = try await emulator.pushes()
        #expect(accepted.count == 1)
        await client.shutdown()
        await emulator.stop()
    }
}

@Suite("FCM OAuth2 token renewal against the emulator", .serialized)
struct OAuthRenewalTests {
    /// The emulator issues tokens that live 310 s, so the provider's 5-minute renewal margin
    /// is reached after 10 s of the injected clock (and the assertions' `iat` stays within
    /// the few seconds of skew the token endpoint tolerates).
    @Test("the access token is cached, renewed 5 minutes before it expires, and replaced when FCM rejects it")
    func renewal() async throws {
        let emulator = try EmulatorProcess.start(arguments: ["--access-token-ttl", "310"])
        let clock = ManualClock(start: Date())
        let http = try HTTP2Client(configuration: .init(caFile: emulator.caFile))
        http.start()
        let provider = try FCMAccessTokenProvider(account: emulator.serviceAccount, http: http, now: { clock.now })
        let first = try await provider.token()
        #expect(!first.isEmpty)
        clock.advance(seconds: 5)
        #expect(try await provider.token() == first, "305 s left, more than the 300 s margin: reused")
        clock.advance(seconds: 10)
        let second = try await provider.token()
        #expect(second != first, "295 s left, within the margin: renewed")
        let third = try await provider.invalidate(second)
        #expect(third != second, "a rejected token is replaced at once")
        #expect(try await provider.invalidate(second) == third, "a stale rejection does not fetch again")
        let stats = try await emulator.stats()
        let oauth = (stats["by_service"] as? [String: Any])?["oauth"] as? [String: Any]
        #expect(oauth?["requests"] as? Int == 3, "three token requests in all: \(String(describing: oauth))")
        await http.shutdown()
        await emulator.stop()
    }
}
