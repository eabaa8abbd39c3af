import Foundation
import PushCrypto
import PushDelivery
import PushModel
import PushRuntime
import PushStore
import Synchronization

/// Delivers one accepted job: resolves its devices in one query, seals the content per
/// device and sends, a bounded number at once. What to do next is the planner's business.
final class JobProcessor: Sendable {
    struct Limits: Sendable {
        /// Envelopes sealed at once: CPU work, so about the number of cores.
        var encryptions: Int
        /// Seal each push on the HTTP/2 loop thread that sends it rather than on the pool
        /// (`WorkerConfiguration.sealingThreads`).
        var sealOnLoops = false
        /// Pushes in flight at once across all jobs of this worker.
        var deliveries: Int
        /// Of those, at most this many for bulk-lane jobs, so urgent jobs always find room.
        var bulkDeliveries: Int = 100
        /// Devices one recipient may have per job (the most recently registered win).
        var devicesPerRecipient: Int = 20
        /// Recipients (or device ids) resolved and delivered at a time, so a worker's memory
        /// does not grow with the size of a job.
        var batch: Int = 500
    }

    /// Why a job's delivery stopped before every device was attempted; the job goes back to
    /// the queue, never acked.
    enum Interruption: Error, CustomStringConvertible {
        /// The device lookup failed (the database is down).
        case lookup(StoreError)
        /// The worker is stopping (cancelled, or its shutdown timed out).
        case cancelled

        var description: String {
            switch self {
            case .lookup(let error): "device lookup failed: \(error)"
            case .cancelled: "cancelled before every device was attempted"
            }
        }
    }

    let registry: DeviceRegistry
    let router: DeliveryRouter
    let keys: PublicKeyCache
    /// Sealings and key checks at once (`limits.encryptions`).
    let encryptionPermits: AsyncSemaphore
    private let deliveryPermits: AsyncSemaphore
    /// Taken before `deliveryPermits` by bulk-lane jobs: bulk never holds more than its share.
    private let bulkDeliveryPermits: AsyncSemaphore
    let limits: Limits
    let metrics: WorkerMetrics

    init(registry: DeviceRegistry, router: DeliveryRouter, keys: PublicKeyCache, limits: Limits, metrics: WorkerMetrics) {
        self.registry = registry
        self.router = router
        self.keys = keys
        self.encryptionPermits = AsyncSemaphore(permits: max(1, limits.encryptions))
        self.deliveryPermits = AsyncSemaphore(permits: max(1, limits.deliveries))
        self.bulkDeliveryPermits = AsyncSemaphore(permits: max(1, min(limits.bulkDeliveries, limits.deliveries)))
        self.limits = limits
        self.metrics = metrics
    }

    /// How far a job got: the batches done and what became of their devices. Kept by the
    /// caller across an outage, so a job resumes at the batch the lookup failed on instead of
    /// pushing to the devices of earlier batches again.
    struct Progress: Sendable {
        var report = DeliveryReport()
        var batchesDone = 0
    }

    /// Delivers the job's devices, resolved and delivered in batches of `limits.batch`
    /// recipients (or device ids), starting after `progress.batchesDone` and recording each
    /// batch as it ends. A failed lookup or a cancellation throws, and the job is not acked
    /// with devices unattempted.
    ///
    /// `expired` (the message came past the job's expiry): the devices are resolved but
    /// nothing is sealed or sent, so the outcome tally counts them and a
    /// retry's dead letter names them.
    func deliver(_ accepted: AcceptedJob, progress: inout Progress, expired: Bool = false) async throws(Interruption) {
        if let activity = accepted.job.liveActivity {
            // One batch: Live Activity jobs address an activity's tokens in one lookup.
            guard progress.batchesDone == 0 else { return }
            let delivered: [DeviceResult]
            do { delivered = try await deliverLiveActivity(accepted, activity, expired: expired) } catch { throw .lookup(error) }
            guard !Task.isCancelled else { throw .cancelled }
            for result in delivered { progress.report.add(result) }
            progress.batchesDone = 1
            return
        }
        let context = JobContext(accepted)
        for batch in Self.batches(of: accepted, size: max(1, limits.batch)).dropFirst(progress.batchesDone) {
            let devices: [Device]
            do { devices = try await resolve(batch, job: accepted.job) } catch { throw .lookup(error) }
            let delivered = expired
                ? devices.map { DeviceResult(device: $0, outcome: .expired) }
                : await dispatch(devices, lane: accepted.job.delivery.lane, context: context)
            // A cancelled worker may have skipped devices or cut sends short: never ack that.
            guard !Task.isCancelled, delivered.count == devices.count else { throw .cancelled }
            for result in delivered { progress.report.add(result) }
            progress.batchesDone += 1
        }
    }

    /// Runs `deliver` for every device, a bounded number at once.
    func deliverAll(
        _ devices: [Device], lane: NotificationJob.Lane = .urgent, _ deliver: nonisolated(nonsending) @escaping @Sendable (Device) async -> DeviceOutcome
    ) async -> [DeviceResult] {
        // Discarding, with the results gathered as each ends: a finished device's task (and
        // the stack its frames grew) is freed at once instead of when the batch ends.
        let results = ResultCollector(capacity: devices.count)
        await withDiscardingTaskGroup { group in
            for device in devices {
                // Bounds the tasks alive at once, not only the requests: a 10,000-device job
                // does not create 10,000 suspended tasks holding payloads.
                guard await takeDeliveryPermit(lane: lane) else { break }
                metrics.deliveriesInFlight.add(1)
                group.addTask { [self] in
                    defer {
                        metrics.deliveriesInFlight.add(-1)
                        returnDeliveryPermit(lane: lane)
                    }
                    let result = DeviceResult(device: device, outcome: await deliver(device))
                    results.add(result)
                }
            }
        }
        return results.all
    }

    /// Waits for room for one more push of `lane` (a bulk push takes a bulk permit first, so
    /// bulk never holds more than its share); false if the task was cancelled meanwhile.
    nonisolated(nonsending) func takeDeliveryPermit(lane: NotificationJob.Lane) async -> Bool {
        if lane == .bulk {
            do { try await bulkDeliveryPermits.acquire() } catch { return false }
        }
        do { try await deliveryPermits.acquire() } catch {
            if lane == .bulk { bulkDeliveryPermits.release() }
            return false
        }
        return true
    }

    /// Gives back what `takeDeliveryPermit(lane:)` took.
    func returnDeliveryPermit(lane: NotificationJob.Lane) {
        deliveryPermits.release()
        if lane == .bulk { bulkDeliveryPermits.release() }
    }

    /// The results of a batch's device tasks, appended as each ends.
    private final class ResultCollector: Sendable {
        private let results: Mutex<[DeviceResult]>

        init(capacity: Int) {
            var results: [DeviceResult] = []
            results.reserveCapacity(capacity)
            self.results = Mutex(results)
        }

        func add(_ result: DeviceResult) { results.withLock { $0.append(result) } }
        var all: [DeviceResult] { results.withLock { $0 } }
    }

    /// Why a device gets no push: what it is recorded as instead.
    struct NotSent: Error {
        let outcome: DeviceOutcome
    }

    /// The device's envelope (nil for a legacy device or a content-free job: fallback only).
    /// Runs on its caller's executor (nonisolated(nonsending)), sealing included: call it
    /// from a task of the cooperative pool, as `dispatch`'s are, never from an actor, which
    /// would then do the RSA work.
    ///
    /// The key is looked up under the same encryption permit as the sealing: for a key no
    /// worker checked yet that is OpenSSL's full check (4-7 ms, far more than a seal), CPU
    /// work that `encryption_concurrency` bounds like the sealing itself. Outside the permit,
    /// a burst of new keys used every core whatever the setting.
    nonisolated(nonsending) func envelope(for device: Device, context: JobContext) async -> Result<QuotedEnvelopeJSON?, NotSent> {
        guard let publicKey = device.publicKey, let plaintext = context.plaintext else { return .success(nil) }
        do {
            try await encryptionPermits.acquire()
        } catch {
            return .failure(NotSent(outcome: .sealingFailed("\(error)")))
        }
        defer { encryptionPermits.release() }
        let key: DevicePublicKey
        do {
            key = try keys.key(for: publicKey, id: device.keyID, checkedBefore: device.publicKeyChecked)
        } catch {
            return .failure(NotSent(outcome: .keyInvalid(error)))
        }
        do {
            return .success(try timedSealing { () throws(SealError) in
                try EnvelopeSealer.sealQuotedJSON(plaintext, for: key, keyID: device.keyID)
            })
        } catch {
            return .failure(NotSent(outcome: .sealingFailed("\(error)")))
        }
    }

    /// Sealing is CPU work: it runs on the cooperative pool, a bounded number at once, so a
    /// large job cannot starve everything else of threads.
    func seal(_ plaintext: [UInt8], for key: DevicePublicKey, keyID: String?) async throws -> String {
        try await sealing { () throws(SealError) in try EnvelopeSealer.sealJSON(plaintext, for: key, keyID: keyID) }
    }

    /// Runs one sealing under an encryption permit, timed, on the caller's executor (see
    /// `envelope(for:context:)`).
    private nonisolated(nonsending) func sealing<Sealed>(_ seal: () throws(SealError) -> Sealed) async throws -> Sealed {
        try await encryptionPermits.acquire()
        defer { encryptionPermits.release() }
        return try timedSealing(seal)
    }

    /// One sealing, timed into `encryption_seconds`; the caller holds an encryption permit.
    private func timedSealing<Sealed>(_ seal: () throws(SealError) -> Sealed) throws(SealError) -> Sealed {
        let started = ContinuousClock.now
        let sealed = try seal()
        metrics.encryptionSeconds.observe(since: started)
        return sealed
    }

    /// A push refused before it is sent, in the provider's own terms.
    struct Refused: Error {
        let outcome: DeliveryOutcome
    }

    /// An APNs push ready to send, with the client of its app.
    struct PreparedAPNs: Sendable {
        let client: APNsClient
        let notification: APNsNotification
    }

    func apnsNotification(for device: Device, envelope: QuotedEnvelopeJSON?, context: JobContext) -> Result<PreparedAPNs, Refused> {
        guard let client = router.apns(for: device.appID) else {
            return .failure(Refused(outcome: .configurationError(reason: "no APNs credentials configured for \(device.appID)", status: 0)))
        }
        let payload: [UInt8]
        do { payload = try context.apnsTemplate.payload(quotedEncryptedData: envelope?.bytes) } catch {
            return .failure(Refused(outcome: .rejected(reason: "\(APNsReason.payloadTooLarge): \(error)", status: 413)))
        }
        let notification = APNsNotification(
            deviceToken: device.token, bundleID: device.appID,
            environment: device.environment == .sandbox ? .sandbox : .production,
            pushType: .alert, priority: context.job.delivery.priority == .high ? .immediate : .conservesPower,
            expiration: context.apnsExpiration, collapseID: context.collapseID,
            payload: payload)
        return .success(PreparedAPNs(client: client, notification: notification))
    }

    /// The token was accepted in the other APNs environment: record that, so later pushes go
    /// there first. Best effort: if the update fails, the next push checks again.
    nonisolated(nonsending) func correctEnvironment(of device: Device, to environment: PushEnvironment) async {
        let changed = try? await registry.correctEnvironment(deviceID: device.id, to: environment)
        metrics.environmentsCorrected.increment(changed == true ? "corrected" : "unchanged")
    }

    func fcmBody(for device: Device, envelope: QuotedEnvelopeJSON?, context: JobContext) -> Result<(FCMClient, [UInt8]), Refused> {
        guard let client = router.fcm(for: device.appID) else {
            return .failure(Refused(outcome: .configurationError(reason: "no FCM credentials configured for \(device.appID)", status: 0)))
        }
        do {
            return .success((client, try context.fcmTemplate.body(
                token: device.token, quotedEncryptedData: envelope?.bytes, encryptedDataLength: envelope?.textLength ?? 0)))
        } catch {
            return .failure(Refused(outcome: .rejected(reason: "PayloadTooLarge: \(error)", status: 413)))
        }
    }
}
