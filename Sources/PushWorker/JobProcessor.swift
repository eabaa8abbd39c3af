import Foundation
import PushCrypto
import PushDelivery
import PushModel
import PushQueue
import PushRuntime
import PushStore

/// Where devices come from: the registry in production, anything in tests.
public protocol DeviceDirectory: Sendable {
    func devices(forRecipients recipientIDs: [String], in app: AppIdentifiers) async throws(StoreError) -> [Device]
    func devices(ids: [Int64], in app: AppIdentifiers?) async throws(StoreError) -> [Device]
}

extension DeviceRegistry: DeviceDirectory {}

/// What to do with a job message once it has been processed.
struct JobResult: Sendable {
    enum Settlement: Sendable, Equatable {
        /// Ack once every publish in `publishes` is confirmed.
        case ack
        /// Put the message back (a dependency is down); nothing was published.
        case requeue(reason: String)
    }

    var settlement: Settlement
    /// Events, a retry job and dead letters this job caused, all to be confirmed by the
    /// broker before the job is acked.
    var publishes: [PublishRequest] = []
    /// The job itself was refused (malformed, oversize): its one publish is the dead letter.
    var refused = false
}

/// Turns one job message into pushes: validates, resolves devices in one query, seals the
/// content per device, delivers, and plans the follow-ups (events, retries, dead letters).
final class JobProcessor: Sendable {
    struct Limits: Sendable {
        /// Envelopes sealed at once: CPU work, so about the number of cores.
        var encryptions: Int
        /// Pushes in flight at once across all jobs of this worker.
        var deliveries: Int
    }

    private let directory: any DeviceDirectory
    private let router: DeliveryRouter
    private let keys: PublicKeyCache
    let topology: Topology
    let retryPolicy: RetryPolicy
    private let encryptionPermits: AsyncSemaphore
    private let deliveryPermits: AsyncSemaphore
    let metrics: WorkerMetrics
    private let logger: Logger

    init(
        directory: any DeviceDirectory, router: DeliveryRouter, keys: PublicKeyCache, topology: Topology,
        retryPolicy: RetryPolicy, limits: Limits, metrics: WorkerMetrics, logger: Logger
    ) {
        self.directory = directory
        self.router = router
        self.keys = keys
        self.topology = topology
        self.retryPolicy = retryPolicy
        self.encryptionPermits = AsyncSemaphore(permits: max(1, limits.encryptions))
        self.deliveryPermits = AsyncSemaphore(permits: max(1, limits.deliveries))
        self.metrics = metrics
        self.logger = logger
    }

    /// Larger messages are dead-lettered unread: 10,000 recipient ids fit in well under this.
    static let maximumJobBytes = 2 << 20

    func process(_ message: QueueMessage) async -> JobResult {
        guard message.body.count <= Self.maximumJobBytes else {
            logger.warning("oversize job dead-lettered", ["bytes": .int(message.body.count), "message_id": .string(message.messageID ?? "")])
            metrics.deadLetters.increment("oversize")
            let reason = "oversize job: \(message.body.count) bytes, the limit is \(Self.maximumJobBytes)"
            return JobResult(settlement: .ack, publishes: [deadLetter(body: message.body, reason: reason, message: message)], refused: true)
        }
        let job: NotificationJob
        do {
            job = try NotificationJob(json: Data(message.body))
        } catch {
            logger.warning("malformed job dead-lettered", ["reason": .string(error.description), "message_id": .string(message.messageID ?? "")])
            metrics.deadLetters.increment("malformed")
            return JobResult(
                settlement: .ack, publishes: [deadLetter(body: message.body, reason: "malformed job: \(error.description)", message: message)],
                refused: true)
        }
        let log = logger.with(["job_id": .string(job.jobID), "attempt": .int(job.retry?.attempt ?? 1)])

        let devices: [Device]
        do {
            devices = try await resolveDevices(job)
        } catch {
            log.warning("device lookup failed; the job goes back to the queue", ["error": .string("\(error)")])
            return JobResult(settlement: .requeue(reason: "device lookup failed: \(error)"))
        }

        let firstAttemptAt = job.retry?.firstAttemptAt
            ?? message.timestamp.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? Date()
        let context = JobContext(job: job, firstAttemptAt: firstAttemptAt)
        let outcomes = await deliverAll(devices, context: context)
        return followUps(for: outcomes, context: context, message: message, logger: log)
    }

    private func resolveDevices(_ job: NotificationJob) async throws(StoreError) -> [Device] {
        let app = AppIdentifiers(iosBundleID: job.app.iosBundleID, fcmProjectID: job.app.fcmProjectID)
        if let retry = job.retry, !retry.deviceIDs.isEmpty {
            return try await directory.devices(ids: retry.deviceIDs, in: app)
        }
        switch job.recipients {
        case .recipientIDs(let ids): return try await directory.devices(forRecipients: ids, in: app)
        case .deviceIDs(let ids): return try await directory.devices(ids: ids, in: app)
        }
    }

    // MARK: - Delivery

    /// Everything about a job that is the same for each of its devices, computed once.
    struct JobContext: Sendable {
        let job: NotificationJob
        let firstAttemptAt: Date
        let plaintext: [UInt8]?
        let apnsTemplate: APNsPayloadTemplate
        let fcmTemplate: FCMMessageTemplate
        let collapseID: String
        let expiresAt: Date?

        init(job: NotificationJob, firstAttemptAt: Date) {
            self.job = job
            self.firstAttemptAt = firstAttemptAt
            plaintext = SealedContent.plaintext(for: job)
            collapseID = CollapseIdentifier.forJob(id: job.jobID, explicit: job.delivery.collapseID)
            if let expiresAt = job.delivery.expiresAt {
                self.expiresAt = Date(timeIntervalSince1970: TimeInterval(expiresAt))
            } else if let ttl = job.delivery.ttlSeconds {
                self.expiresAt = firstAttemptAt.addingTimeInterval(TimeInterval(ttl))
            } else {
                self.expiresAt = nil
            }
            apnsTemplate = APNsPayloadTemplate(job: job)
            let ttlLeft = expiresAt.map { Int64(max(0, $0.timeIntervalSinceNow.rounded(.down))) }
            fcmTemplate = FCMMessageTemplate(
                job: job, priority: job.delivery.priority == .high ? .high : .normal, collapseKey: collapseID, ttlSeconds: ttlLeft)
        }
    }

    struct DeviceOutcome: Sendable {
        let device: Device
        let outcome: DeliveryOutcome
        /// Set when the device was skipped for its unusable public key.
        let keyProblem: PublicKeyError?
    }

    private func deliverAll(_ devices: [Device], context: JobContext) async -> [DeviceOutcome] {
        await withTaskGroup(of: DeviceOutcome.self) { group in
            for device in devices {
                // Bounds the tasks alive at once, not only the requests: a 10,000-device job
                // does not create 10,000 suspended tasks holding payloads.
                do { try await deliveryPermits.acquire() } catch { break }
                metrics.deliveriesInFlight.add(1)
                group.addTask { [self] in
                    defer {
                        metrics.deliveriesInFlight.add(-1)
                        deliveryPermits.release()
                    }
                    return await deliver(to: device, context: context)
                }
            }
            var outcomes: [DeviceOutcome] = []
            outcomes.reserveCapacity(devices.count)
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
    }

    private func deliver(to device: Device, context: JobContext) async -> DeviceOutcome {
        // Seal for this device (fallback only for a legacy device or a content-free job).
        var envelope: String?
        if let publicKey = device.publicKey, let plaintext = context.plaintext {
            do {
                let key = try keys.key(for: publicKey)
                envelope = try await seal(plaintext, for: key, keyID: device.keyID)
            } catch let error as PublicKeyError {
                return DeviceOutcome(device: device, outcome: .rejected(reason: "key.invalid: \(error)", status: 0), keyProblem: error)
            } catch {
                return DeviceOutcome(device: device, outcome: .rejected(reason: "encryption failed: \(error)", status: 0), keyProblem: nil)
            }
        }
        let started = ContinuousClock.now
        let outcome: DeliveryOutcome
        switch device.platform {
        case .ios: outcome = await sendAPNs(device, envelope: envelope, context: context)
        case .android: outcome = await sendFCM(device, envelope: envelope, context: context)
        }
        metrics.deliverySeconds.observe(since: started, device.platform.rawValue)
        return DeviceOutcome(device: device, outcome: outcome, keyProblem: nil)
    }

    /// Sealing is CPU work: it runs on the cooperative pool, a bounded number at once, so a
    /// large job cannot starve everything else of threads.
    private func seal(_ plaintext: [UInt8], for key: DevicePublicKey, keyID: String?) async throws -> String {
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
            return .rejected(reason: "PayloadTooLarge: \(error)", status: 413)
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
