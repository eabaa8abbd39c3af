import Foundation
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// A token is pruned only once it is known to be dead: the other APNs environment is tried
/// before `BadDeviceToken` prunes, and the cleanup consumer bounds every prune by a time.
@Suite("Token hygiene", .serialized)
struct TokenHygieneTests {
    static func iosToken(_ prefix: String) -> String {
        String((prefix + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() + String(repeating: "0", count: 64)).prefix(64))
    }

    @Test("BadDeviceToken: a sandbox token registered as production is delivered in sandbox and corrected, not pruned; a token bad in both is pruned")
    func otherEnvironmentBeforePruning() async throws {
        try await WorkerFixture.run { fixture in
            let recipient = "\(fixture.prefix)-env"
            func register(_ token: String) async throws -> Int64 {
                try await fixture.registry.register(DeviceRegistration(
                    recipientID: recipient, platform: .ios, appID: fixture.bundleID, environment: .production, token: token,
                    publicKey: fixture.publicKeys[0])).deviceID
            }
            let sandboxToken = Self.iosToken("5bd0")  // the emulator: BadDeviceToken in production only
            let deadToken = Self.iosToken("400b")  // BadDeviceToken everywhere
            let sandboxDevice = try await register(sandboxToken)
            let deadDevice = try await register(deadToken)
            let worker = try fixture.startWorker(environment: ["PUSHD_APNS_SANDBOX_URL": fixture.emulator.url + "/sandbox"])
            let cleanup = try fixture.startCleanup()
            _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-env-job", recipients: [recipient], title: "Secret"))

            let delivered = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.received().contains { $0.token == sandboxToken }
            }
            #expect(delivered, "\(worker.log.suffix(2000))")
            #expect(try await fixture.received().first { $0.token == sandboxToken }?.environment == "sandbox")
            let pruned = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.registry.devices(ids: [deadDevice]).isEmpty
            }
            #expect(pruned, "the token bad in both environments is pruned")
            let corrected = try await fixture.registry.devices(ids: [sandboxDevice])
            #expect(corrected.count == 1, "the sandbox device was not pruned")
            #expect(corrected.first?.environment == .sandbox, "its environment was corrected")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
            #expect(await cleanup.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("cleanup: no provider timestamp bounds by occurred_at; an unparseable invalid_since or an event the database refuses is dead-lettered alone, the rest of its batch settled once")
    func cleanupBounds() async throws {
        try await WorkerFixture.run { fixture in
            var ids: [String: Int64] = [:]
            var tokens: [String: String] = [:]
            for name in ["reregistered", "unparseable", "refused", "stale"] {
                let token = Self.iosToken("c0de")
                tokens[name] = token
                ids[name] = try await fixture.registry.register(DeviceRegistration(
                    recipientID: "\(fixture.prefix)-\(name)", platform: .ios, appID: fixture.bundleID, environment: .production,
                    token: token, publicKey: nil)).deviceID
            }
            let hourAgo = RFC3339.string(from: Date().addingTimeInterval(-3600))
            let inAnHour = RFC3339.string(from: Date().addingTimeInterval(3600))
            func event(_ name: String, occurredAt: String, extra: String = #","environment":"production""#) -> [UInt8] {
                Array(("""
                    {"version":1,"event":"token.invalid","event_id":"\(UUID().uuidString)","occurred_at":"\(occurredAt)",
                     "platform":"ios","app_id":"\(fixture.bundleID)","token":"\(tokens[name] ?? "")","reason":"BadDeviceToken"\(extra)}
                    """).utf8)
            }
            let bodies = [
                // Failed an hour ago, re-registered since (just now): kept.
                event("reregistered", occurredAt: hourAgo),
                event("unparseable", occurredAt: inAnHour, extra: #","environment":"production","invalid_since":"yesterday""#),
                // No environment for an iOS token: the database would refuse it (22023).
                event("refused", occurredAt: inAnHour, extra: ""),
                // Failed after its registration: pruned.
                event("stale", occurredAt: inAnHour),
                // A token PostgreSQL cannot store (NUL): the database refuses the whole batch.
                Array((#"{"version":1,"event":"token.invalid","occurred_at":"\#(inAnHour)","platform":"ios","app_id":"\#(fixture.bundleID)","environment":"production","token":"c0de\u0000nul","reason":"BadDeviceToken"}"#).utf8),
            ]
            for body in bodies {
                try await fixture.amqp.publish(PublishRequest(
                    exchange: fixture.topology.eventsExchange, routingKey: Topology.tokenInvalidRoutingKey,
                    message: OutgoingMessage(body: body, contentType: "application/json")))
            }
            let cleanup = try fixture.startCleanup()
            let stalePruned = try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await fixture.registry.devices(ids: [ids["stale"] ?? 0]).isEmpty
            }
            #expect(stalePruned, "\(cleanup.log.suffix(2000))")
            let dead = try await fixture.deadLetters(count: 3, timeout: .seconds(30))
            #expect(dead.count == 3, "the unparseable, the unusable and the refused event are dead-lettered")
            let deadTokens = Set(dead.compactMap { message in
                (try? JSONSerialization.jsonObject(with: Data(message.body)) as? [String: Any])?["token"] as? String
            })
            #expect(deadTokens == Set([tokens["unparseable"], tokens["refused"], "c0de\u{0}nul"].compactMap { $0 }))
            for name in ["reregistered", "unparseable", "refused"] {
                #expect(try await fixture.registry.devices(ids: [ids[name] ?? 0]).count == 1, "\(name) kept")
            }
            #expect(cleanup.log.contains("pruning its events one by one"), "the refused batch was split")
            #expect(!cleanup.log.contains("go back to the queue"), "nothing was redelivered")
            #expect(await cleanup.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
