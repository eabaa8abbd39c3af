import Foundation
import PushCrypto
import PushDelivery
import PushModel
import PushStore

/// Live Activity jobs (`Schemas/live-activities.md`): each recipient iOS device's push-to-start
/// or update token, `private_props` sealed per device into `props.encrypted_data`; Android
/// devices get the ordinary alert only with `android_fallback`; a broadcast is one request to
/// its channel. Outcomes go to the planner exactly as alerts' do.
extension JobProcessor {
    /// `expired`: the devices (or a broadcast's stand-in) are looked up, nothing is sent, as
    /// for alerts (`deliver(_:progress:expired:)`).
    func deliverLiveActivity(_ accepted: AcceptedJob, _ activity: LiveActivity, expired: Bool = false) async throws(StoreError) -> [DeviceResult] {
        let job = accepted.job
        let context = JobContext(accepted)
        let payload = LiveActivityPayload(activity: activity)
        guard let bundleID = job.app.iosBundleID else { return [] }  // intake requires it
        if activity.isBroadcast {
            if expired { return [DeviceResult(device: Self.broadcastStandIn(activity, bundleID: bundleID), outcome: .expired)] }
            return [await broadcast(activity, bundleID: bundleID, payload: payload, context: context)]
        }

        let targets = try await liveActivityTargets(accepted, activity, bundleID: bundleID)
        let android = try await androidDevices(accepted)
        var results: [DeviceResult] = []
        var sendable: [Device] = []
        for target in targets {
            guard let device = Device(target, appID: bundleID) else {
                results.append(DeviceResult(
                    device: Device(target, appID: bundleID, token: ""), outcome: .skipped(.init(reason: .noToken, event: activity.event))))
                continue
            }
            sendable.append(device)
        }
        if expired {
            results += sendable.map { DeviceResult(device: $0, outcome: .expired) }
        } else {
            results += await deliverAll(sendable) { device in
                await self.deliverLiveActivity(to: device, activity: activity, payload: payload, context: context)
            }
        }
        if activity.androidFallback {
            results += expired ? android.map { DeviceResult(device: $0, outcome: .expired) } : await dispatch(android, lane: .urgent, context: context)
        } else {
            results += android.map { DeviceResult(device: $0, outcome: .skipped(.init(reason: .android, event: activity.event))) }
        }
        if activity.event == .end, let activityID = activity.activityID {
            try await endActivity(activityID, bundleID: bundleID, results: results)
        }
        return results
    }

    /// The recipients' iOS devices with their token of the kind the event needs; on a retry
    /// only the devices still waiting.
    private func liveActivityTargets(
        _ accepted: AcceptedJob, _ activity: LiveActivity, bundleID: String
    ) async throws(StoreError) -> [LiveActivityTarget] {
        let kind = activity.tokenKind
        if let ids = accepted.retryDeviceIDs {
            return try await registry.liveActivityTargets(appID: bundleID, kind: kind, activityID: activity.activityID, deviceIDs: ids)
        }
        switch accepted.job.recipients {
        case .recipientIDs(let ids):
            return try await registry.liveActivityTargets(appID: bundleID, kind: kind, activityID: activity.activityID, recipientIDs: ids)
        case .deviceIDs(let ids):
            return try await registry.liveActivityTargets(appID: bundleID, kind: kind, activityID: activity.activityID, deviceIDs: ids)
        }
    }

    /// The recipients' Android devices: delivered with `android_fallback`, else counted.
    private func androidDevices(_ accepted: AcceptedJob) async throws(StoreError) -> [Device] {
        guard let project = accepted.job.app.fcmProjectID else { return [] }
        let app = AppIdentifiers(fcmProjectID: project)
        if let ids = accepted.retryDeviceIDs { return try await registry.devices(ids: ids, in: app) }
        switch accepted.job.recipients {
        case .recipientIDs(let ids): return try await registry.devices(forRecipients: ids, in: app)
        case .deviceIDs(let ids): return try await registry.devices(ids: ids, in: app)
        }
    }

    /// Seals `private_props` for one device (its final size checked first, so an oversized
    /// device costs no RSA operation) and sends to its Live Activity token. On its caller's
    /// executor, as `envelope(for:context:)` is: from `deliverAll`'s pool tasks only.
    private nonisolated(nonsending) func deliverLiveActivity(
        to device: Device, activity: LiveActivity, payload: LiveActivityPayload, context: JobContext
    ) async -> DeviceOutcome {
        var envelope: String?
        if let publicKey = device.publicKey, let plaintext = payload.plaintext {
            let key: DevicePublicKey
            do {
                key = try keys.key(for: publicKey, id: device.keyID, checkedBefore: device.publicKeyChecked)
            } catch {
                return .keyInvalid(error)
            }
            let size = payload.size(sealingFor: (key.bits + 7) / 8, keyID: device.keyID)
            guard size <= payload.limit else {
                let error = PayloadError.tooLarge(bytes: size, limit: payload.limit)
                return .sent(.rejected(reason: "\(APNsReason.payloadTooLarge): \(error)", status: 413))
            }
            do { envelope = try await seal(plaintext, for: key, keyID: device.keyID) } catch {
                return .sealingFailed("\(error)")
            }
        }
        let bytes: [UInt8]
        do { bytes = try payload.payload(encryptedData: envelope) } catch {
            return .sent(.rejected(reason: "\(APNsReason.payloadTooLarge): \(error)", status: 413))
        }
        guard let client = router.apns(for: device.appID) else {
            return .sent(.configurationError(reason: "no APNs credentials configured for \(device.appID)", status: 0))
        }
        let notification = APNsNotification(
            deviceToken: device.token, bundleID: device.appID, environment: device.environment == .sandbox ? .sandbox : .production,
            pushType: .liveactivity, priority: activity.priority == 10 ? .immediate : .conservesPower,
            expiration: context.apnsExpiration, collapseID: nil, payload: bytes)
        let started = ContinuousClock.now
        // As for alerts: a BadDeviceToken is tried once in the other environment before the
        // token is declared dead (an activity's tokens live in their device's environment).
        let checked = await client.sendCheckingEnvironment(notification)
        if let corrected = checked.correctedEnvironment {
            await correctEnvironment(of: device, to: corrected == .sandbox ? .sandbox : .production)
        }
        metrics.deliverySeconds[.ios].observe(since: started)
        return .sent(checked.outcome)
    }

    /// One request to the channel; its result stands in for every subscriber (`broadcastStandIn`).
    private func broadcast(
        _ activity: LiveActivity, bundleID: String, payload: LiveActivityPayload, context: JobContext
    ) async -> DeviceResult {
        let channelID = activity.channelID ?? ""
        let standIn = Self.broadcastStandIn(activity, bundleID: bundleID)
        let bytes: [UInt8]
        do { bytes = try payload.payload(encryptedData: nil) } catch {
            return DeviceResult(device: standIn, outcome: .sent(.rejected(reason: "\(APNsReason.payloadTooLarge): \(error)", status: 413)))
        }
        guard let client = router.apns(for: bundleID) else {
            return DeviceResult(
                device: standIn, outcome: .sent(.configurationError(reason: "no APNs credentials configured for \(bundleID)", status: 0)))
        }
        let request = APNsBroadcast(
            bundleID: bundleID, channelID: channelID, environment: activity.environment == .sandbox ? .sandbox : .production,
            priority: activity.priority == 10 ? .immediate : .conservesPower,
            expiration: Self.broadcastExpiration(context), payload: bytes)
        let started = ContinuousClock.now
        let outcome = await client.send(request)
        metrics.deliverySeconds[.ios].observe(since: started)
        return DeviceResult(device: standIn, outcome: .sent(outcome))
    }

    /// The device a broadcast's result is recorded for: id 0 (no registry row), the channel
    /// id in place of a token.
    static func broadcastStandIn(_ activity: LiveActivity, bundleID: String) -> Device {
        Device(
            id: 0, recipientID: "", platform: .ios, appID: bundleID, environment: activity.environment, token: activity.channelID ?? "",
            publicKey: nil, keyID: nil, keyRegisteredAt: nil, tokenRegisteredAt: Date(), appVersion: nil)
    }

    /// `ttl_seconds: 0` is APNs's "try once", `apns-expiration: 0`: the only value a channel
    /// without message storage accepts. Otherwise as for alerts.
    static func broadcastExpiration(_ context: JobContext) -> Int64? {
        if context.job.delivery.ttlSeconds == 0 { return 0 }
        return context.expiresAt.map { max(0, Int64($0.timeIntervalSince1970)) }
    }

    /// After an end: the activity's update tokens go, on the devices whose end push is settled
    /// (a device waiting for a retry keeps its token until its own attempt settles).
    private func endActivity(_ activityID: String, bundleID: String, results: [DeviceResult]) async throws(StoreError) {
        let settled = results.compactMap { result -> Int64? in
            guard result.device.platform == .ios else { return nil }
            switch result.outcome {
            case .sent(.retryLater), .skipped, .expired: return nil
            default: return result.device.id
            }
        }
        guard !settled.isEmpty else { return }
        _ = try await registry.endActivity(appID: bundleID, activityID: activityID, deviceIDs: settled)
    }
}

extension Device {
    /// The device as a Live Activity job sees it: its Live Activity token in place of its
    /// device token. nil when it has no such token.
    convenience init?(_ target: LiveActivityTarget, appID: String) {
        guard let token = target.token else { return nil }
        self.init(target, appID: appID, token: token)
    }

    convenience init(_ target: LiveActivityTarget, appID: String, token: String) {
        self.init(
            id: target.deviceID, recipientID: target.recipientID, platform: .ios, appID: appID, environment: target.environment,
            token: token, publicKey: target.publicKey, keyID: target.keyID, keyRegisteredAt: nil,
            tokenRegisteredAt: target.tokenRegisteredAt ?? Date(timeIntervalSince1970: 0), appVersion: nil,
            publicKeyChecked: target.publicKeyChecked)
    }
}
