import Foundation
import PushModel

/// Everything about a job that is the same for each of its devices, computed once.
struct JobContext: Sendable {
    let job: NotificationJob
    let plaintext: [UInt8]?
    let apnsTemplate: APNsPayloadTemplate
    let fcmTemplate: FCMMessageTemplate
    let collapseID: String
    let expiresAt: Date?
    /// `apns-expiration` (0 for `ttl_seconds: 0`).
    let apnsExpiration: Int64?

    init(_ accepted: AcceptedJob) {
        let job = accepted.job
        self.job = job
        // What the intake's size check rendered already, when it did (see `JobDocument.sealedParts`).
        let checked = accepted.document.sealedParts
        plaintext = checked.map(\.plaintext) ?? SealedContent.plaintext(for: job)
        // A chunk's collapse id is its original's: a split job collapses as one.
        collapseID = CollapseIdentifier.forJob(id: job.reportJobID, explicit: job.delivery.collapseID)
        expiresAt = accepted.expiresAt
        apnsExpiration = accepted.apnsExpiration
        apnsTemplate = checked?.apnsTemplate ?? APNsPayloadTemplate(job: job)
        let ttlLeft = expiresAt.map { Int64(max(0, $0.timeIntervalSinceNow.rounded(.down))) }
        fcmTemplate = FCMMessageTemplate(
            job: job, priority: job.delivery.priority == .high ? .high : .normal, collapseKey: job.delivery.collapseID,
            ttlSeconds: ttlLeft, notificationTag: collapseID)
    }
}
