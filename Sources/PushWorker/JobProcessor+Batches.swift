import PushModel
import PushStore

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
        switch batch {
        case .devices(let ids):
            let devices = try await registry.devices(ids: ids, in: app)
            guard case .recipientIDs(let recipients) = job.recipients else { return devices }
            // A retry of a recipients job: only devices of those recipients.
            let allowed = Set(recipients)
            return devices.filter { allowed.contains($0.recipientID) }
        case .recipients(let ids):
            let (devices, capped) = try await registry.devices(
                forRecipients: ids, in: app, maximumPerRecipient: max(1, limits.devicesPerRecipient))
            if !capped.isEmpty { metrics.recipientsCapped.increment(by: Double(capped.count)) }
            return devices
        }
    }
}
