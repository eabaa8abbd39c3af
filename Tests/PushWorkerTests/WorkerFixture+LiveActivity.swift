import Foundation
import PushModel
import PushStore
import PushTestSupport

/// Live Activity helpers: devices with push-to-start and update tokens, jobs, and what the
/// emulator received for them.
extension WorkerFixture {
    /// A registered device and the Live Activity tokens the test gave it.
    struct ActivityDevice: Sendable {
        let id: Int64
        let recipient: String
        let platform: Platform
        let deviceToken: String
        /// Index into `keys`; nil for a legacy device.
        let keyIndex: Int?
        let pushToStart: String?
        let update: String?
    }

    /// A 64-hex-digit APNs token starting with `prefix` (the emulator's scripted outcomes).
    static func hexToken(_ prefix: String = "c0de") -> String {
        String((prefix + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() + String(repeating: "0", count: 64)).prefix(64))
    }

    /// Registers a device and, for iOS, the Live Activity tokens asked for (by their prefix).
    func registerActivityDevice(
        recipient: String, platform: Platform = .ios, keyIndex: Int?, pushToStart: String? = nil, update: String? = nil,
        activityID: String
    ) async throws -> ActivityDevice {
        let deviceToken = platform == .ios ? Self.hexToken() : "fcm-" + UUID().uuidString
        let outcome = try await registry.register(DeviceRegistration(
            recipientID: recipient, platform: platform, appID: platform == .ios ? bundleID : EmulatorProcess.projectID,
            environment: platform == .ios ? .production : nil, token: deviceToken, publicKey: keyIndex.map { publicKeys[$0] }))
        let startToken = pushToStart.map { Self.hexToken($0) }
        let updateToken = update.map { Self.hexToken($0) }
        if let startToken {
            _ = try await registry.registerPushToStartToken(appID: bundleID, environment: .production, deviceToken: deviceToken, token: startToken)
        }
        if let updateToken {
            _ = try await registry.registerActivityToken(
                appID: bundleID, environment: .production, deviceToken: deviceToken, activityID: activityID, token: updateToken)
        }
        return ActivityDevice(
            id: outcome.deviceID, recipient: recipient, platform: platform, deviceToken: deviceToken, keyIndex: keyIndex,
            pushToStart: startToken, update: updateToken)
    }

    /// A Live Activity job for `recipients`; `block` is merged into `live_activity`.
    func activityJob(
        id: String, event: String, activityID: String, timestamp: Int, recipients: [String]?, status: String,
        privateProps: [String: Any]? = ["candidateName": "Ada Lovelace", "avatarUrl": "https://cdn.example.com/ada.png"],
        block: [String: Any] = [:]
    ) -> [String: Any] {
        var activity: [String: Any] = [
            "event": event, "activity_id": activityID, "timestamp": timestamp,
            "content_state": ["name": "InterviewActivity", "props": ["meetingEventId": activityID, "status": status]],
        ]
        if let privateProps { activity["private_props"] = privateProps }
        if event == "start" {
            activity["attributes_type"] = "LiveActivityAttributes"
            activity["attributes"] = ["name": "InterviewActivity"]
            activity["alert"] = ["title": "Interview in 15 minutes", "body": "Open to see who you are meeting"]
        }
        activity.merge(block) { $1 }
        var job: [String: Any] = [
            "version": 1, "job_id": id, "push_type": "liveactivity",
            "app": ["ios_bundle_id": bundleID, "fcm_project_id": EmulatorProcess.projectID],
            "live_activity": activity,
        ]
        if let recipients { job["recipients"] = ["recipient_ids": recipients] }
        return job
    }

    /// One push the emulator accepted, decoded.
    struct AcceptedPush {
        let seq: Int
        let token: String?
        let channelID: String?
        let headers: [String: String]
        let body: [String: Any]

        var aps: [String: Any] { body["aps"] as? [String: Any] ?? [:] }
        var timestamp: Int? { aps["timestamp"] as? Int }
        /// `content-state.props`, decoded from its JSON string.
        var props: [String: Any]? {
            guard let state = aps["content-state"] as? [String: Any], let text = state["props"] as? String else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        }
    }

    func acceptedPushes() async throws -> [AcceptedPush] {
        try await emulator.pushes().compactMap { record in
            guard let seq = record["seq"] as? Int, let text = record["body"] as? String,
                  let body = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            else { return nil }
            return AcceptedPush(
                seq: seq, token: record["token"] as? String, channelID: record["channel_id"] as? String,
                headers: record["headers"] as? [String: String] ?? [:], body: body)
        }
    }

    /// The value of one sample of a worker's `/metrics` (0 when absent or unreachable).
    static func metric(_ sample: String, port: Int) throws -> Double {
        let scraped = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/metrics"])
        for line in scraped.outputText.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1)) ?? 0
        }
        return 0
    }

    /// Runs a one-shot `pushd` command against the fixture's emulator and database.
    func runPushd(_ arguments: [String]) throws -> ChildProcess.Result {
        try ChildProcess.run(
            BuildProducts.pushd, arguments,
            environment: environment.merging(["PUSHD_APNS_CHANNELS_URL": emulator.channelsURL]) { $1 })
    }
}
