import Foundation
import PushModel

/// The first step of a job message: bytes in, a job or a dead-letter reason out.
///
/// Pure (no I/O, `now` given), so every rule can be unit-tested and new validation can be
/// added here without touching delivery.
struct JobIntake: Sendable {
    /// Larger messages are dead-lettered unread: 10,000 recipient ids fit in well under this.
    static let defaultMaximumBytes = 2 << 20

    var maximumBytes = Self.defaultMaximumBytes

    enum Decision: Sendable, Equatable {
        case accepted(AcceptedJob)
        case deadLetter(DeadLetterReason)
    }

    /// - Parameters:
    ///   - publishedAt: the AMQP `timestamp` (epoch seconds) producers set on a first attempt.
    ///   - now: the first-attempt time of a job that carries neither retry state nor timestamp.
    func accept(_ body: [UInt8], publishedAt: UInt64?, now: Date) -> Decision {
        guard body.count <= maximumBytes else {
            return .deadLetter(.oversize(bytes: body.count, limit: maximumBytes))
        }
        let document: JobDocument
        do {
            document = try JobDocument(json: Data(body))
        } catch {
            return .deadLetter(.malformed(error))
        }
        let firstAttemptAt = document.job.retry?.firstAttemptAt
            ?? publishedAt.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? now
        return .accepted(AcceptedJob(document: document, firstAttemptAt: firstAttemptAt))
    }
}

/// A job that passed intake, with what follows from it and its first attempt.
struct AcceptedJob: Sendable, Equatable {
    let document: JobDocument
    /// When the job was first tried: TTL and the retry policy's maximum age count from it.
    let firstAttemptAt: Date

    var job: NotificationJob { document.job }

    /// This attempt's number (1 for a job fresh from a producer).
    var attempt: Int { job.retry?.attempt ?? 1 }

    /// `delivery.expires_at`, else first attempt + `delivery.ttl_seconds`, else none.
    var expiresAt: Date? {
        if let expiresAt = job.delivery.expiresAt { return Date(timeIntervalSince1970: TimeInterval(expiresAt)) }
        if let ttl = job.delivery.ttlSeconds { return firstAttemptAt.addingTimeInterval(TimeInterval(ttl)) }
        return nil
    }

    /// Device ids a retry attempt is limited to; nil on a first attempt (all recipients).
    var retryDeviceIDs: [Int64]? {
        guard let ids = job.retry?.deviceIDs, !ids.isEmpty else { return nil }
        return ids
    }
}
