import Foundation
import PushCrypto
import PushDelivery
import PushModel
import PushRuntime
import PushStore

/// Delivers one accepted job: resolves its devices in one query, seals the content per
/// device and sends, a bounded number at once. What to do next is the planner's business.
final class JobProcessor: Sendable {
    struct Limits: Sendable {
        /// Envelopes sealed at once: CPU work, so about the number of cores.
        var encryptions: Int
        /// Pushes in flight at once across all jobs of this worker.
        var deliveries: Int
        /// Of those, at most this many for bulk-lane jobs, so urgent jobs always find room.
        var bulkDeliveries: Int
    }

    let registry: DeviceRegistry
    let router: DeliveryRouter
    let keys: PublicKeyCache
    private let encryptionPermits: AsyncSemaphore
    private let deliveryPermits: AsyncSemaphore
    /// Taken before `deliveryPermits` by bulk-lane jobs: bulk never holds more than its share.
    private let bulkDeliveryPermits: AsyncSemaphore
    let metrics: WorkerMetrics

    init(registry: DeviceRegistry, router: DeliveryRouter, keys: PublicKeyCache, limits: Limits, metrics: WorkerMetrics) {
        self.registry = registry
        self.router = router
        self.keys = keys
        self.encryptionPermits = AsyncSemaphore(permits: max(1, limits.encryptions))
        self.deliveryPermits = AsyncSemaphore(permits: max(1, limits.deliveries))
        self.bulkDeliveryPermits = AsyncSemaphore(permits: max(1, min(limits.bulkDeliveries, limits.deliveries)))
        self.metrics = metrics
    }

    /// One result per device; a failed device lookup throws (the job goes back to the queue).
    func deliver(_ accepted: AcceptedJob) async throws(StoreError) -> [DeviceResult] {
        if let activity = accepted.job.liveActivity { return try await deliverLiveActivity(accepted, activity) }
        let devices = try await resolveDevices(accepted)
        let context = JobContext(accepted)
        return await deliverAll(devices, lane: accepted.job.delivery.lane) { device in await self.deliver(to: device, context: context) }
    }

    private func resolveDevices(_ accepted: AcceptedJob) async throws(StoreError) -> [Device] {
        let job = accepted.job
        let app = AppIdentifiers(iosBundleID: job.app.iosBundleID, fcmProjectID: job.app.fcmProjectID)
        if let ids = accepted.retryDeviceIDs {
            return try await registry.devices(ids: ids, in: app)
        }
        switch job.recipients {
        case .recipientIDs(let ids): return try await registry.devices(forRecipients: ids, in: app)
        case .deviceIDs(let ids): return try await registry.devices(ids: ids, in: app)
        }
    }

    /// Runs `deliver` for every device, a bounded number at once.
    func deliverAll(
        _ devices: [Device], lane: NotificationJob.Lane = .urgent, _ deliver: @escaping @Sendable (Device) async -> DeviceOutcome
    ) async -> [DeviceResult] {
        await withTaskGroup(of: DeviceResult.self) { group in
            for device in devices {
                // Bounds the tasks alive at once, not only the requests: a 10,000-device job
                // does not create 10,000 suspended tasks holding payloads.
                if lane == .bulk {
                    do { try await bulkDeliveryPermits.acquire() } catch { break }
                }
                do { try await deliveryPermits.acquire() } catch {
                    if lane == .bulk { bulkDeliveryPermits.release() }
                    break
                }
                metrics.deliveriesInFlight.add(1)
                group.addTask { [self] in
                    defer {
                        metrics.deliveriesInFlight.add(-1)
                        deliveryPermits.release()
                        if lane == .bulk { bulkDeliveryPermits.release() }
                    }
                    return DeviceResult(device: device, outcome: await deliver(device))
                }
            }
            var results: [DeviceResult] = []
            results.reserveCapacity(devices.count)
            for await result in group { results.append(result) }
            return results
        }
    }

    func deliver(to device: Device, context: JobContext) async -> DeviceOutcome {
        // Seal for this device (fallback only for a legacy device or a content-free job).
        var envelope: String?
        if let publicKey = device.publicKey, let plaintext = context.plaintext {
            let key: DevicePublicKey
            do { key = try keys.key(for: publicKey) } catch { return .keyInvalid(error) }
            do { envelope = try await seal(plaintext, for: key, keyID: device.keyID) } catch {
                return .sealingFailed("\(error)")
            }
        }
        let started = ContinuousClock.now
        let outcome: DeliveryOutcome
        switch device.platform {
        case .ios: outcome = await sendAPNs(device, envelope: envelope, context: context)
        case .android: outcome = await sendFCM(device, envelope: envelope, context: context)
        }
        metrics.deliverySeconds.observe(since: started, device.platform.rawValue)
        return .sent(outcome)
    }

    /// Sealing is CPU work: it runs on the cooperative pool, a bounded number at once, so a
    /// large job cannot starve everything else of threads.
    func seal(_ plaintext: [UInt8], for key: DevicePublicKey, keyID: String?) async throws -> String {
        try await encryptionPermits.acquire()
        defer { encryptionPermits.release() }
        let started = ContinuousClock.now
        let json = try EnvelopeSealer.sealJSON(plaintext, for: key, keyID: keyID)
        metrics.encryptionSeconds.observe(since: started)
        return json
    }

    private func sendAPNs(_ device: Device, envelope: String?, context: JobContext) async -> DeliveryOutcome {
        guard let client = router.apns(for: device.appID) else {
            return .configurationError(reason: "no APNs credentials configured for \(device.appID)", status: 0)
        }
        let payload: [UInt8]
        do { payload = try context.apnsTemplate.payload(encryptedData: envelope) } catch {
            return .rejected(reason: "\(APNsReason.payloadTooLarge): \(error)", status: 413)
        }
        let notification = APNsNotification(
            deviceToken: device.token, bundleID: device.appID,
            environment: device.environment == .sandbox ? .sandbox : .production,
            pushType: .alert, priority: context.job.delivery.priority == .high ? .immediate : .conservesPower,
            expiration: context.expiresAt.map { Int64($0.timeIntervalSince1970) }, collapseID: context.collapseID,
            payload: payload)
        return await client.send(notification)
    }

    private func sendFCM(_ device: Device, envelope: String?, context: JobContext) async -> DeliveryOutcome {
        guard let client = router.fcm(for: device.appID) else {
            return .configurationError(reason: "no FCM credentials configured for \(device.appID)", status: 0)
        }
        let body: [UInt8]
        do { body = try context.fcmTemplate.body(token: device.token, encryptedData: envelope) } catch {
            return .rejected(reason: "PayloadTooLarge: \(error)", status: 413)
        }
        return await client.send(body: body)
    }
}
