import PushModel
import PushStore
import Synchronization

/// A job's addressees resolved and delivered a bounded batch at a time, each recipient capped
/// at `limits.devicesPerRecipient` devices: a worker's memory does not grow with the job.
extension JobProcessor {
    enum Batch: Equatable {
        case recipients([String])
        case devices([Int64])
    }

    /// The job's addressees in batches: the retry's devices, else its recipients or device ids.
    static func batches(of accepted: AcceptedJob, size: Int) -> [Batch] {
        func split<T>(_ items: [T], _ make: ([T]) -> Batch) -> [Batch] {
            stride(from: 0, to: items.count, by: size).map { make(Array(items[$0..<min($0 + size, items.count)])) }
        }
        if let ids = accepted.retryDeviceIDs {
            // Even a retry only reaches the job's own addressees (defence in depth: retry
            // state is trusted, but never beyond the recipients it was derived from).
            if case .deviceIDs(let addressed) = accepted.job.recipients {
                let allowed = Set(addressed)
                return split(ids.filter(allowed.contains), Batch.devices)
            }
            return split(ids, Batch.devices)
        }
        switch accepted.job.recipients {
        case .recipientIDs(let ids): return split(ids, Batch.recipients)
        case .deviceIDs(let ids): return split(ids, Batch.devices)
        }
    }

    func resolve(_ batch: Batch, job: NotificationJob) async throws(StoreError) -> [Device] {
        let app = AppIdentifiers(iosBundleID: job.app.iosBundleID, fcmProjectID: job.app.fcmProjectID)
        // While most keys are found in the cache, keys come back as digests and their texts
        // from the cache; otherwise (a cold worker, a broadcast wider than the cache) as text.
        let fromCache = CacheHits()
        let knownKeys = keys.prefersDigests
            ? KnownPublicKeys { [keys] digest in
                let text = keys.text(forDigest: digest)
                if text != nil { fromCache.count.add(1, ordering: .relaxed) }
                return text
            }
            : nil
        let devices: [Device]
        switch batch {
        case .devices(let ids):
            devices = try await registry.devices(ids: ids, in: app, knownKeys: knownKeys)
        case .recipients(let ids):
            let capped: [String]
            (devices, capped) = try await registry.devices(
                forRecipients: ids, in: app, maximumPerRecipient: max(1, limits.devicesPerRecipient), knownKeys: knownKeys)
            if !capped.isEmpty { metrics.recipientsCapped.increment(by: Double(capped.count)) }
        }
        // Counted over the look-up's own rows, before a retry's filter below.
        let cached = fromCache.count.load(ordering: .relaxed)
        var withKey = 0
        for device in devices where device.publicKey != nil { withKey += 1 }
        if cached > 0 { metrics.publicKeyTexts.increment(by: Double(cached), "cache") }
        if withKey > cached { metrics.publicKeyTexts.increment(by: Double(withKey - cached), "database") }
        guard case .devices = batch, case .recipientIDs(let recipients) = job.recipients else { return devices }
        // A retry of a recipients job: only devices of those recipients.
        let allowed = Set(recipients)
        return devices.filter { allowed.contains($0.recipientID) }
    }
}

/// How many key texts a lookup took from the cache (the closure runs on the pool thread
/// that decodes the rows, so a relaxed atomic suffices).
private final class CacheHits: Sendable {
    let count = Atomic<Int>(0)
}
