import Foundation
import PushModel
@testable import PushWorker
import Testing

/// Live Activity jobs through the pure parts: intake, planner, metrics.
@Suite("Live Activity follow-ups and metrics")
struct LiveActivityFollowUpTests {
    let planner = FollowUpPlanner(retryPolicy: Fixtures.policy(maximumAttempts: 3))

    static func accepted(_ block: String, extra: String = #","recipients":{"recipient_ids":["user-1"]}"#) throws -> AcceptedJob {
        let json = #"{"version":1,"job_id":"la-1","push_type":"liveactivity","app":{"ios_bundle_id":"com.example.app","fcm_project_id":"example"}"#
            + extra + #","live_activity":"# + block + "}"
        return try Fixtures.accepted(Array(json.utf8))
    }

    static let update = #"{"event":"update","activity_id":"meeting-1","timestamp":1764548160,"content_state":{"name":"n"}}"#
    static let start = #"{"event":"start","activity_id":"meeting-1","timestamp":1764548160,"content_state":{"name":"n"},"attributes_type":"A","attributes":{},"alert":{"title":"t","body":"b"}}"#
    static let broadcast = #"{"event":"update","channel_id":"dHN0LXNyY2gtY2hubA==","timestamp":1764548160,"content_state":{"name":"n"}}"#

    @Test("an invalid iOS token of a Live Activity job names its kind (and the activity for update tokens); Android's stays a device token")
    func tokenKinds() throws {
        let since = Date(timeIntervalSince1970: 1_700_000_000)
        let invalid = DeviceOutcome.sent(.invalidToken(reason: "Unregistered", invalidSince: since))
        let results = [
            DeviceResult(device: Fixtures.device(1), outcome: invalid),
            DeviceResult(device: Fixtures.device(2, platform: .android), outcome: invalid),
        ]
        let update = planner.plan(results, for: try Self.accepted(Self.update), now: Fixtures.now)
        let events = update.compactMap { followUp -> TokenInvalidEvent? in
            if case .tokenInvalid(let event) = followUp { return event }
            return nil
        }
        #expect(events.map(\.tokenKind) == [.activityUpdate, nil])
        #expect(events.map(\.activityID) == ["meeting-1", nil])
        #expect(events[0].invalidSince == since)
        let json = String(decoding: events[0].json, as: UTF8.self)
        #expect(json.contains(#""token_kind":"activity_update""#) && json.contains(#""activity_id":"meeting-1""#))

        let start = planner.plan([results[0]], for: try Self.accepted(Self.start), now: Fixtures.now)
        guard case .tokenInvalid(let event) = start.first else { Issue.record("\(start)"); return }
        #expect(event.tokenKind == .pushToStart && event.activityID == nil)
        let decoded = try JSONDecoder().decode(TokenInvalidEvent.self, from: Data(event.json))
        #expect(decoded == event)
    }

    @Test("a broadcast to retry is retried whole: its retry names no device, and the retried job is accepted")
    func broadcastRetry() throws {
        let accepted = try Self.accepted(Self.broadcast, extra: "")
        let standIn = Device(
            id: 0, recipientID: "", platform: .ios, appID: "com.example.app", environment: .production, token: "dHN0LXNyY2gtY2hubA==",
            publicKey: nil, keyID: nil, keyRegisteredAt: nil, tokenRegisteredAt: Fixtures.now, appVersion: nil)
        let plan = planner.plan(
            [DeviceResult(device: standIn, outcome: .sent(.retryLater(reason: "ServiceUnavailable", retryAfter: nil)))],
            for: accepted, now: Fixtures.now)
        guard case .retry(let state, _) = plan.first else { Issue.record("\(plan)"); return }
        #expect(state.deviceIDs.isEmpty)
        let retried = try Fixtures.accepted(accepted.document.json(retry: state))
        #expect(retried.attempt == 2 && retried.retryDeviceIDs == nil)
        #expect(retried.job.liveActivity?.timestamp == 1_764_548_160, "the retry keeps the job's creation time")
    }

    @Test("skipped devices are counted apart from deliveries, by reason and event")
    func skipped() {
        let metrics = WorkerMetrics()
        metrics.record([
            DeviceResult(device: Fixtures.device(1), outcome: .skipped(.init(reason: .noToken, event: .update))),
            DeviceResult(device: Fixtures.device(2, platform: .android), outcome: .skipped(.init(reason: .android, event: .update))),
            DeviceResult(device: Fixtures.device(3, platform: .android), outcome: .skipped(.init(reason: .android, event: .update))),
            DeviceResult(device: Fixtures.device(4), outcome: .sent(.delivered(id: nil))),
        ], followUps: [])
        #expect(metrics.liveActivitySkipped.value("no_token", "update") == 1)
        #expect(metrics.liveActivitySkipped.value("android", "update") == 2)
        #expect(metrics.deliveries.value("ios", "delivered") == 1)
        #expect(metrics.deliveries.value("android", "skipped") == 0 && metrics.deliveries.value("ios", "skipped") == 0)
    }
}
