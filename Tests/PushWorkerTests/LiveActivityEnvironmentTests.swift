import Foundation
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// APNs answers `BadDeviceToken` for a dead token and for a live one sent to the other
/// environment alike: a Live Activity token is tried there too before it is pruned, as a
/// device token is (`EnvironmentCheckTests`).
@Suite("Live Activity tokens: the other environment before pruning", .serialized)
struct LiveActivityEnvironmentTests {
    @Test("a push-to-start token live only in the other environment is delivered there; its device's environment is corrected, the token kept")
    func otherEnvironment() async throws {
        try await WorkerFixture.run { fixture in
            let activity = "meeting-\(fixture.prefix)"
            let recipient = "\(fixture.prefix)-r"
            // 5bd0: BadDeviceToken in production, accepted in the sandbox (the emulator's rule);
            // the device is registered as production.
            let device = try await fixture.registerActivityDevice(recipient: recipient, keyIndex: 0, pushToStart: "5bd0", activityID: activity)
            let events = try await fixture.subscribe(toEvents: Topology.tokenInvalidRoutingKey)
            let metricsPort = try FreePort.find()
            // The sandbox host: the emulator's path prefix for it.
            let worker = try fixture.startWorker(environment: [
                "PUSHD_METRICS_PORT": String(metricsPort), "PUSHD_APNS_SANDBOX_URL": fixture.emulator.url + "/sandbox",
            ])
            _ = try await fixture.publish(fixture.activityJob(
                id: "\(fixture.prefix)-start", event: "start", activityID: activity, timestamp: 1_764_547_200,
                recipients: [recipient], status: "upcoming"))

            // Acked: its follow-ups (a token.invalid event, were there one) are confirmed by then.
            let acked = try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                try WorkerFixture.metric(#"pushd_jobs_completed_total{result="acked"}"#, port: metricsPort) == 1
            }
            #expect(acked, "worker log:\n\(worker.log.suffix(3000))")
            let pushes = try await fixture.received().filter { $0.token == device.pushToStart }
            #expect(pushes.map(\.environment) == ["sandbox"])
            #expect(try await fixture.amqp.statistics(queue: events).messages == 0, "a live token was reported invalid")
            let row = try #require(try await fixture.registry.devices(ids: [device.id]).first)
            #expect(row.environment == .sandbox)
            let starts = try await fixture.registry.liveActivityTargets(
                appID: fixture.bundleID, kind: .pushToStart, activityID: activity, recipientIDs: [recipient])
            #expect(starts.map(\.token) == [device.pushToStart])
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
