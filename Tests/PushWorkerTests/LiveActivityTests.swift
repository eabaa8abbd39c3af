import Foundation
import PushClient
import PushCrypto
import PushModel
import PushStore
import PushTestSupport
import Testing

/// Live Activities end to end: `pushd worker` (and `pushd cleanup`) as processes, real
/// RabbitMQ and PostgreSQL, the emulator holding every request to Apple's rules.
@Suite("Live Activities end to end", .serialized)
struct LiveActivityTests {
    static let privateProps: [String: String] = ["candidateName": "Ada Lovelace", "avatarUrl": "https://cdn.example.com/ada.png"]

    /// The envelope in `props.encrypted_data` opens with the device's key to exactly the
    /// private fields, and not with another key.
    static func expectSealed(_ push: WorkerFixture.AcceptedPush, for device: WorkerFixture.ActivityDevice, fixture: WorkerFixture) throws {
        let props = try #require(push.props, "no props string")
        #expect(props["candidateName"] == nil && props["avatarUrl"] == nil, "private fields never in the clear")
        guard let keyIndex = device.keyIndex else {
            #expect(props["encrypted_data"] == nil, "a legacy device gets the clear layout")
            return
        }
        let sealed = try #require(props["encrypted_data"] as? [String: Any], "device \(device.id) got no envelope")
        let envelope = try JSONSerialization.data(withJSONObject: sealed)
        let opened = try JSONSerialization.jsonObject(with: Data(try fixture.keys[keyIndex].open(json: envelope))) as? NSDictionary
        #expect(opened == privateProps as NSDictionary)
        #expect(throws: EnvelopeOpenError.self) { try fixture.keys[(keyIndex + 1) % fixture.keys.count].open(json: envelope) }
    }

    /// What the phone's Live Activity enricher (`PushClient`) makes of the push: the private
    /// fields merged into the props for a keyed device, the clear layout for a legacy one,
    /// never the envelope itself.
    static func expectPhoneReads(_ push: WorkerFixture.AcceptedPush, for device: WorkerFixture.ActivityDevice, fixture: WorkerFixture) async throws {
        let store = device.keyIndex.map { InMemoryKeyStore(current: OpenSSLPrivateKey(fixture.keys[$0])) } ?? InMemoryKeyStore()
        let enricher = LiveActivityEnricher(keyStore: store, staging: InMemoryEnrichmentStaging())
        let body = try JSONSerialization.data(withJSONObject: push.body)
        let reading = await enricher.read(try #require(PayloadValue(json: Array(body))))
        #expect(reading.malformed == nil, "the phone would apply it")
        #expect(reading.view.props["encrypted_data"] == nil)
        #expect(reading.view.props["meetingEventId"]?.stringValue == push.props?["meetingEventId"] as? String)
        if device.keyIndex != nil {
            #expect(reading.view.enrichment == .enriched(avatarFile: nil))
            for (key, value) in privateProps { #expect(reading.view.props[key]?.stringValue == value) }
        } else {
            #expect(reading.view.enrichment == .notEnriched)
            for key in privateProps.keys { #expect(reading.view.props[key] == nil) }
        }
    }

    @Test("start, update and end reach their tokens; each envelope opens with its device's key; legacy devices get the clear layout; Android only with android_fallback; end removes the tokens")
    func startUpdateEnd() async throws {
        try await WorkerFixture.run { fixture in
            let activity = "meeting-\(fixture.prefix)"
            let recipient = "\(fixture.prefix)-interviewer"
            let keyed = try await fixture.registerActivityDevice(recipient: recipient, keyIndex: 0, pushToStart: "c0de", activityID: activity)
            let second = try await fixture.registerActivityDevice(recipient: recipient, keyIndex: 1, pushToStart: "c0de", activityID: activity)
            let legacy = try await fixture.registerActivityDevice(recipient: recipient, keyIndex: nil, pushToStart: "c0de", activityID: activity)
            let tokenless = try await fixture.registerActivityDevice(recipient: recipient, keyIndex: 2, activityID: activity)
            let android = try await fixture.registerActivityDevice(recipient: recipient, platform: .android, keyIndex: 3, activityID: activity)
            let iosDevices = [keyed, second, legacy]
            let metricsPort = try FreePort.find()
            let worker = try fixture.startWorker(environment: ["PUSHD_METRICS_PORT": String(metricsPort)])

            // Start: to each push-to-start token, at priority 10 as asked.
            _ = try await fixture.publish(fixture.activityJob(
                id: "\(fixture.prefix)-start", event: "start", activityID: activity, timestamp: 1_764_547_200,
                recipients: [recipient], status: "upcoming", block: ["priority": 10]))
            let starts = Set(iosDevices.compactMap(\.pushToStart))
            let started = try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                Set(try await fixture.acceptedPushes().compactMap(\.token)).isSuperset(of: starts)
            }
            #expect(started, "worker log:\n\(worker.log.suffix(3000))")
            for device in iosDevices {
                let push = try #require(try await fixture.acceptedPushes().first { $0.token == device.pushToStart })
                #expect(push.headers["apns-push-type"] == "liveactivity")
                #expect(push.headers["apns-topic"] == fixture.bundleID + ".push-type.liveactivity")
                #expect(push.headers["apns-priority"] == "10")
                #expect(push.headers["apns-collapse-id"] == nil && push.headers["apns-expiration"] == nil)
                #expect(push.aps["event"] as? String == "start" && push.timestamp == 1_764_547_200)
                #expect(push.aps["attributes-type"] as? String == "LiveActivityAttributes")
                #expect(push.aps["input-push-token"] as? Int == 1)
                #expect(push.props?["meetingEventId"] as? String == activity)
                try Self.expectSealed(push, for: device, fixture: fixture)
                try await Self.expectPhoneReads(push, for: device, fixture: fixture)
            }

            // The app reports each running activity's update token.
            var updates: [Int64: String] = [:]
            for device in iosDevices + [tokenless] {
                let token = WorkerFixture.hexToken("c0de")
                _ = try await fixture.registry.registerActivityToken(
                    appID: fixture.bundleID, environment: .production, deviceToken: device.deviceToken, activityID: activity, token: token)
                updates[device.id] = token
            }

            // Update: to each update token, at the default priority 5; "now or never" (ttl 0) is
            // APNs's apns-expiration 0, as for alerts.
            var update = fixture.activityJob(
                id: "\(fixture.prefix)-update", event: "update", activityID: activity, timestamp: 1_764_548_160,
                recipients: [recipient], status: "in-progress")
            update["delivery"] = ["ttl_seconds": 0]
            _ = try await fixture.publish(update)
            let updated = try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                Set(try await fixture.acceptedPushes().compactMap(\.token)).isSuperset(of: Set(updates.values))
            }
            #expect(updated, "worker log:\n\(worker.log.suffix(3000))")
            for device in iosDevices + [tokenless] {
                let push = try #require(try await fixture.acceptedPushes().first { $0.token == updates[device.id] })
                #expect(push.headers["apns-priority"] == "5" && push.headers["apns-expiration"] == "0")
                #expect(push.aps["event"] as? String == "update" && push.timestamp == 1_764_548_160)
                #expect(push.props?["status"] as? String == "in-progress")
                let keyedDevice = WorkerFixture.ActivityDevice(
                    id: device.id, recipient: recipient, platform: .ios, deviceToken: device.deviceToken, keyIndex: device.keyIndex,
                    pushToStart: nil, update: updates[device.id])
                try Self.expectSealed(push, for: keyedDevice, fixture: fixture)
                try await Self.expectPhoneReads(push, for: keyedDevice, fixture: fixture)
            }

            // End with an Android fallback: update tokens get the end, Android the alert.
            var end = fixture.activityJob(
                id: "\(fixture.prefix)-end", event: "end", activityID: activity, timestamp: 1_764_551_400,
                recipients: [recipient], status: "finished", block: ["dismissal_date": 1_764_552_300, "android_fallback": true])
            end["fallback"] = ["title": "Interview finished", "message": "Open the app to leave your feedback"]
            end["content"] = ["title": "Interview with Ada Lovelace finished", "message": "Leave your feedback"]
            _ = try await fixture.publish(end)
            let ended = try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                let pushes = try await fixture.acceptedPushes()
                let ends = pushes.filter { $0.aps["event"] as? String == "end" }.compactMap(\.token)
                return Set(ends) == Set(updates.values) && pushes.contains { $0.token == android.deviceToken }
            }
            #expect(ended, "worker log:\n\(worker.log.suffix(3000))")
            let pushes = try await fixture.acceptedPushes()
            for device in iosDevices + [tokenless] {
                let push = try #require(pushes.first { $0.token == updates[device.id] && $0.aps["event"] as? String == "end" })
                #expect(push.aps["dismissal-date"] as? Int == 1_764_552_300 && push.timestamp == 1_764_551_400)
                #expect(push.aps["alert"] == nil && push.props?["status"] as? String == "finished")
                let withUpdateToken = WorkerFixture.ActivityDevice(
                    id: device.id, recipient: recipient, platform: .ios, deviceToken: device.deviceToken, keyIndex: device.keyIndex,
                    pushToStart: nil, update: updates[device.id])
                try Self.expectSealed(push, for: withUpdateToken, fixture: fixture)
                try await Self.expectPhoneReads(push, for: withUpdateToken, fixture: fixture)
            }
            // Android got exactly one push, the end's alert fallback, sealed for its key.
            let androidPushes = pushes.filter { $0.token == android.deviceToken }
            #expect(androidPushes.count == 1)
            let (envelope, title, _) = WorkerFixture.parts(of: try #require(androidPushes.first).body)
            #expect(title == "Interview finished")
            let opened = try fixture.keys[3].open(json: Data(try #require(envelope).utf8))
            #expect(String(decoding: opened, as: UTF8.self).contains("Interview with Ada Lovelace finished"))
            // The tokenless device got nothing for the start.
            #expect(!pushes.contains { $0.token == tokenless.deviceToken })
            // Counted: the tokenless device's start, and Android's start and update (no fallback).
            let counted = try await waitUntil(timeout: .seconds(30), every: .milliseconds(250)) {
                try WorkerFixture.metric(#"pushd_liveactivity_skipped_total{reason="no_token",event="start"}"#, port: metricsPort) == 1
                    && WorkerFixture.metric(#"pushd_liveactivity_skipped_total{reason="android",event="start"}"#, port: metricsPort) == 1
                    && WorkerFixture.metric(#"pushd_liveactivity_skipped_total{reason="android",event="update"}"#, port: metricsPort) == 1
            }
            #expect(counted)
            #expect(try WorkerFixture.metric(#"pushd_deliveries_total{platform="ios",outcome="delivered"}"#, port: metricsPort) == 11)
            #expect(try WorkerFixture.metric(#"pushd_deliveries_total{platform="android",outcome="delivered"}"#, port: metricsPort) == 1)

            // The ended activity's update tokens are gone; push-to-start tokens stay.
            let removed = try await waitUntil(timeout: .seconds(30), every: .milliseconds(200)) {
                try await fixture.registry.liveActivityTargets(
                    appID: fixture.bundleID, kind: .activityUpdate, activityID: activity, recipientIDs: [recipient]
                ).allSatisfy { $0.token == nil }
            }
            #expect(removed)
            let startTokens = try await fixture.registry.liveActivityTargets(
                appID: fixture.bundleID, kind: .pushToStart, activityID: nil, recipientIDs: [recipient])
            #expect(startTokens.compactMap(\.token).count == 3)

            let logs = worker.log
            #expect(!logs.contains("Ada Lovelace"), "no private data in the logs")
            for device in iosDevices { #expect(!logs.contains(device.pushToStart ?? "-"), "a whole token was logged") }
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("an update retried after a newer one keeps its older timestamp")
    func retriedUpdateKeepsItsTimestamp() async throws {
        try await WorkerFixture.run { fixture in
            let activity = "meeting-\(fixture.prefix)"
            let recipient = "\(fixture.prefix)-r"
            // The emulator fails a "fa11" token's first two requests (503, Retry-After 1).
            let flaky = try await fixture.registerActivityDevice(recipient: recipient, keyIndex: 0, update: "fa11", activityID: activity)
            let steady = try await fixture.registerActivityDevice(recipient: recipient, keyIndex: 1, update: "c0de", activityID: activity)
            // Both updates wait in the queue before the worker starts: their first attempts fail
            // on the flaky token and are retried (through the 1 s tier at the earliest), while
            // the steady token gets both in the first round.
            _ = try await fixture.publish(fixture.activityJob(
                id: "\(fixture.prefix)-older", event: "update", activityID: activity, timestamp: 1_764_548_100,
                recipients: [recipient], status: "older"))
            _ = try await fixture.publish(fixture.activityJob(
                id: "\(fixture.prefix)-newer", event: "update", activityID: activity, timestamp: 1_764_548_200,
                recipients: [recipient], status: "newer"))
            let worker = try fixture.startWorker()
            let delivered = try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                try await fixture.acceptedPushes().filter { $0.token == flaky.update }.count >= 2
            }
            #expect(delivered, "worker log:\n\(worker.log.suffix(3000))")
            let pushes = try await fixture.acceptedPushes()
            let toFlaky = pushes.filter { $0.token == flaky.update }
            let olderRetried = try #require(toFlaky.first { $0.props?["status"] as? String == "older" })
            let newerSteady = try #require(pushes.first { $0.token == steady.update && $0.props?["status"] as? String == "newer" })
            #expect(olderRetried.seq > newerSteady.seq, "the older update reached the flaky token after the newer one was sent")
            #expect(olderRetried.timestamp == 1_764_548_100, "a retry sends the job's creation time, never the send time")
            #expect(toFlaky.first { $0.props?["status"] as? String == "newer" }?.timestamp == 1_764_548_200)
            #expect(toFlaky.count == 2, "each update once")
            try Self.expectSealed(olderRetried, for: flaky, fixture: fixture)
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("invalid push-to-start and update tokens are pruned by the cleanup consumer; the device stays; a token re-registered after the 410 timestamp is kept")
    func invalidTokensPruned() async throws {
        try await WorkerFixture.run { fixture in
            let activity = "meeting-\(fixture.prefix)"
            let recipient = "\(fixture.prefix)-r"
            // 410a: 410 Unregistered (now); 400b: 400 BadDeviceToken; dead: 410 with a 2023 timestamp.
            let unregistered = try await fixture.registerActivityDevice(
                recipient: recipient, keyIndex: 0, pushToStart: "410a", update: "410a", activityID: activity)
            let bad = try await fixture.registerActivityDevice(
                recipient: recipient, keyIndex: 1, pushToStart: "400b", update: "400b", activityID: activity)
            let reRegistered = try await fixture.registerActivityDevice(
                recipient: recipient, keyIndex: nil, pushToStart: "dead", update: "dead", activityID: activity)
            let worker = try fixture.startWorker()
            let cleanup = try fixture.startCleanup()
            _ = try await fixture.publish(fixture.activityJob(
                id: "\(fixture.prefix)-start", event: "start", activityID: activity, timestamp: 1_764_547_200,
                recipients: [recipient], status: "upcoming"))
            _ = try await fixture.publish(fixture.activityJob(
                id: "\(fixture.prefix)-update", event: "update", activityID: activity, timestamp: 1_764_548_160,
                recipients: [recipient], status: "in-progress"))

            func tokens(_ kind: LiveActivity.TokenKind) async throws -> [Int64: String] {
                let targets = try await fixture.registry.liveActivityTargets(
                    appID: fixture.bundleID, kind: kind, activityID: activity, recipientIDs: [recipient])
                return Dictionary(uniqueKeysWithValues: targets.compactMap { target in target.token.map { (target.deviceID, $0) } })
            }
            let pruned = try await waitUntil(timeout: .seconds(60), every: .milliseconds(250)) {
                let starts = try await tokens(.pushToStart), updates = try await tokens(.activityUpdate)
                return starts.keys.sorted() == [reRegistered.id] && updates.keys.sorted() == [reRegistered.id]
            }
            #expect(pruned, "worker:\n\(worker.log.suffix(2000))\ncleanup:\n\(cleanup.log.suffix(2000))")
            #expect(try await tokens(.pushToStart)[reRegistered.id] == reRegistered.pushToStart)
            #expect(try await tokens(.activityUpdate)[reRegistered.id] == reRegistered.update)
            let devices = try await fixture.registry.devices(ids: [unregistered.id, bad.id, reRegistered.id])
            #expect(devices.count == 3, "a Live Activity token never takes its device with it")
            #expect(cleanup.log.contains("token kept"))
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
            #expect(await cleanup.terminate(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a broadcast reaches its channel (created, listed and deleted with pushd channel); a broadcast with private fields is refused")
    func broadcast() async throws {
        try await WorkerFixture.run { fixture in
            let created = try fixture.runPushd(["channel", "create", "--app", fixture.bundleID, "--storage", "0"])
            #expect(created.status == 0, "\(created.errorText)")
            let line = created.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(line.hasPrefix("channel_id="))
            let channel = String(line.dropFirst("channel_id=".count))
            let listed = try fixture.runPushd(["channel", "list", "--app", fixture.bundleID])
            #expect(listed.outputText.split(separator: "\n").map(String.init).contains(channel))
            let read = try fixture.runPushd(["channel", "read", "--app", fixture.bundleID, "--channel-id", channel])
            #expect(read.outputText.contains("message_storage_policy=0"))

            let worker = try fixture.startWorker()
            var job = fixture.activityJob(
                id: "\(fixture.prefix)-broadcast", event: "update", activityID: "town-hall", timestamp: 1_764_590_400,
                recipients: nil, status: "live", privateProps: nil, block: ["channel_id": channel])
            job["delivery"] = ["ttl_seconds": 0]
            _ = try await fixture.publish(job)
            var secret = fixture.activityJob(
                id: "\(fixture.prefix)-broadcast-secret", event: "update", activityID: "town-hall", timestamp: 1_764_590_500,
                recipients: nil, status: "live", block: ["channel_id": channel])
            secret["delivery"] = ["ttl_seconds": 0]
            let data = try JSONSerialization.data(withJSONObject: secret)
            try await fixture.publishRaw(Array(data), messageID: "\(fixture.prefix)-broadcast-secret")

            let reached = try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                try await fixture.acceptedPushes().contains { $0.channelID == channel }
            }
            #expect(reached, "worker log:\n\(worker.log.suffix(3000))")
            let push = try #require(try await fixture.acceptedPushes().first { $0.channelID == channel })
            #expect(push.headers["apns-push-type"] == "liveactivity" && push.headers["apns-topic"] == nil)
            #expect(push.headers["apns-channel-id"] == channel && push.headers["apns-expiration"] == "0")
            #expect(push.aps["event"] as? String == "update" && push.timestamp == 1_764_590_400)
            #expect(push.props?["status"] as? String == "live" && push.props?["encrypted_data"] == nil)
            // What every subscribed phone shows: the clear layout, nothing to decrypt.
            let phone = LiveActivityEnricher(keyStore: InMemoryKeyStore(current: OpenSSLPrivateKey(fixture.keys[0])), staging: InMemoryEnrichmentStaging())
            let reading = await phone.read(try #require(PayloadValue(json: Array(try JSONSerialization.data(withJSONObject: push.body)))))
            #expect(reading.malformed == nil && reading.view.enrichment == .notEnriched)
            #expect(reading.view.event == "update" && reading.view.props["status"]?.stringValue == "live")

            let dead = try await fixture.deadLetters(count: 1, timeout: .seconds(30))
            #expect(dead.count == 1)
            let reason = dead.first?.headers["x-pushd-reason"]?.stringValue ?? ""
            #expect(reason.contains("live_activity.private_props: a broadcast sends one payload to every subscriber"), "\(reason)")
            #expect(try await fixture.acceptedPushes().filter { $0.channelID == channel }.count == 1, "the refused broadcast sent nothing")
            #expect(!worker.log.contains("Ada Lovelace"))

            let deleted = try fixture.runPushd(["channel", "delete", "--app", fixture.bundleID, "--channel-id", channel])
            #expect(deleted.status == 0, "\(deleted.errorText)")
            let after = try fixture.runPushd(["channel", "list", "--app", fixture.bundleID])
            #expect(!after.outputText.contains(channel))
            let gone = try fixture.runPushd(["channel", "read", "--app", fixture.bundleID, "--channel-id", channel])
            #expect(gone.status == 1 && gone.errorText.contains("refused the request: 400 ChannelNotRegistered"), "\(gone.errorText)")
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
        }
    }
}
