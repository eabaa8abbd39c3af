import Foundation
import PushModel
import Testing

@Suite("Live Activity job decoding")
struct LiveActivityDecodingTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Schemas/examples")

    static func example(_ name: String) throws -> NotificationJob {
        try NotificationJob(json: Data(contentsOf: examples.appendingPathComponent(name)))
    }

    @Test("the start example decodes field by field")
    func start() throws {
        let job = try Self.example("liveactivity.start.json")
        #expect(job.pushType == .liveactivity)
        let activity = try #require(job.liveActivity)
        #expect(activity.event == .start)
        #expect(activity.timestamp == 1_764_547_200)
        #expect(activity.activityID == "meeting-77123")
        #expect(activity.attributesType == "LiveActivityAttributes")
        #expect(activity.attributes == ["name": .string("InterviewActivity")])
        #expect(activity.contentState?.name == "InterviewActivity")
        #expect(activity.contentState?.props["meetingEventId"] == .string("meeting-77123"))
        #expect(activity.privateProps?["candidateName"] == .string("Ada Lovelace"))
        #expect(activity.alert == .init(title: "Interview in 15 minutes", body: "Open to see who you are meeting", sound: "default"))
        #expect(activity.staleDate == 1_764_551_700)
        #expect(activity.relevanceScore == 50)
        #expect(activity.priority == 10)
        #expect(activity.inputPush == .token)
        #expect(!activity.isBroadcast && activity.tokenKind == .pushToStart)
        #expect(job.recipients == .recipientIDs(["interviewer-17", "interviewer-42"]))
    }

    @Test("update defaults: priority 5, no fallback needed; end and broadcast decode")
    func otherKinds() throws {
        let update = try #require(try Self.example("liveactivity.update.json").liveActivity)
        #expect(update.priority == 5 && update.tokenKind == .activityUpdate && !update.androidFallback)
        let end = try Self.example("liveactivity.end.json")
        #expect(end.liveActivity?.dismissalDate == 1_764_552_300)
        #expect(end.liveActivity?.androidFallback == true)
        #expect(end.fallback.title == "Interview finished")
        #expect(end.content?.title == "Interview with Ada Lovelace finished")
        let broadcast = try Self.example("liveactivity.broadcast.json")
        #expect(broadcast.liveActivity?.channelID == "dHN0LXNyY2gtY2hubA==")
        #expect(broadcast.liveActivity?.environment == .production)
        #expect(broadcast.recipients == .recipientIDs([]))
    }

    @Test("each invalid example is refused for its own reason", arguments: [
        ("alert-job-with-live-activity-block", "live_activity: is only allowed with push_type"),
        ("android-fallback-without-fallback", "fallback: is required with live_activity.android_fallback"),
        ("broadcast-start", "live_activity.event: a broadcast is"),
        ("broadcast-with-private-props", "live_activity.private_props: a broadcast sends one payload to every subscriber"),
        ("broadcast-with-recipients", "recipients: a broadcast"),
        ("clear-props-with-encrypted-data", "content_state.props.encrypted_data"),
        ("content-without-android-fallback", "content: is only allowed with live_activity.android_fallback"),
        ("delivery-priority", "delivery.priority: is not allowed"),
        ("end-with-alert", "live_activity.alert: is not allowed with event \"end\""),
        ("environment-without-channel", "live_activity.environment: is only for a broadcast"),
        ("no-ios-bundle-id", "app.ios_bundle_id: is required"),
        ("no-live-activity-block", "live_activity: is required"),
        ("priority-7", "live_activity.priority: must be 5"),
        ("start-without-alert", "live_activity.alert: is required for start"),
        ("start-without-attributes-type", "live_activity.attributes_type: is required"),
        ("timestamp-in-milliseconds", "live_activity.timestamp: must be epoch seconds"),
        ("update-with-dismissal-date", "live_activity.dismissal_date: is only allowed with event \"end\""),
        ("update-without-activity-id", "live_activity.activity_id: is required"),
        ("update-without-content-state", "live_activity.content_state: is required for update"),
    ])
    func invalid(name: String, expected: String) {
        let file = Self.examples.appendingPathComponent("invalid/liveactivity.\(name).json")
        let error = #expect(throws: JobValidationError.self) { try NotificationJob(json: Data(contentsOf: file)) }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error") should mention \(expected)")
    }

    static let base = #""version":1,"job_id":"la-1","push_type":"liveactivity","app":{"ios_bundle_id":"com.example.app"},"recipients":{"recipient_ids":["u"]}"#

    @Test("rules the schema cannot express", arguments: [
        (#""live_activity":{"event":"update","activity_id":"a","timestamp":1,"content_state":{"name":"n","props":{"candidateName":"x"}},"private_props":{"candidateName":"Ada"}}"#,
         "live_activity.private_props.candidateName: also present in content_state.props; a private field must never be sent in the clear"),
        (#""live_activity":{"event":"update","activity_id":"a","timestamp":1,"content_state":{"name":"n"},"private_props":{"big":"\#(String(repeating: "x", count: 17_000))"}}"#,
         "at most 16384"),
        (#""live_activity":{"event":"update","activity_id":"a","timestamp":1,"private_props":{"a":"b"}}"#, "content_state: is required for update"),
        (#""live_activity":{"event":"end","activity_id":"a","timestamp":1,"private_props":{"a":"b"}}"#, "private_props: needs content_state"),
        (#""live_activity":{"event":"update","activity_id":"a","timestamp":1,"content_state":{"name":"n"},"relevance_score":"high"}"#, "relevance_score: must be a number"),
        (#""live_activity":{"event":"update","activity_id":"a b","timestamp":1,"content_state":{"name":"n"}}"#, "activity_id: must be 1 to 256"),
    ])
    func workerRules(block: String, expected: String) {
        let json = "{" + Self.base + "," + block + "}"
        let error = #expect(throws: JobValidationError.self) { try NotificationJob(json: Data(json.utf8)) }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error") should mention \(expected)")
    }

    @Test("an alert job still needs recipients and fallback; push_type names what is supported")
    func alertJobsUnchanged() {
        let error = #expect(throws: JobValidationError.self) {
            try NotificationJob(json: Data(#"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{"device_ids":[1]},"fallback":{"title":"f","message":"m"},"push_type":"voip"}"#.utf8))
        }
        #expect(error?.description.contains("push_type") == true)
    }
}
