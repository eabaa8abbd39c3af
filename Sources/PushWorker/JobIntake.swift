import Foundation
import PushModel

/// The first step of a job message: bytes in, a job or a dead-letter reason out.
///
/// Pure (no I/O, `now` given), so every rule can be unit-tested and new validation can be
/// added here without touching delivery.
struct JobIntake: Sendable {
    /// Larger messages are dead-lettered unread (`NotificationJob.maximumBodyBytes`).
    static let defaultMaximumBytes = NotificationJob.maximumBodyBytes

    /// What a retry adds to a producer's job: at most `NotificationJob.maximumRetryDevices`
    /// ids of up to 16 digits, so a retry of a job that was accepted is never refused as
    /// oversize.
    static let retryAllowanceBytes = 256 << 10

    var maximumBytes = Self.defaultMaximumBytes

    /// Which path a message came by. Only workers can publish to the retry exchange
    /// (`Deploy/rabbitmq/definitions.production.json`), so worker state — `retry`, and the
    /// `chunk` of a split job — is trusted only on the queues it feeds (`retries`, `chunks`):
    /// on the producers' queues it is forged.
    enum Source: Sendable, Equatable {
        case producers
        case retries
        case chunks
    }

    enum Decision: Sendable, Equatable {
        case accepted(AcceptedJob)
        case deadLetter(DeadLetterReason)
    }

    /// - Parameters:
    ///   - publishedAt: the AMQP `timestamp` (epoch seconds) producers set on a first attempt;
    ///     one later than `now` counts as `now`.
    ///   - now: the first-attempt time of a job that carries neither retry state nor timestamp.
    ///   - source: the path it came by; a producer's job carrying `retry` is dead-lettered.
    func accept(_ body: [UInt8], publishedAt: UInt64?, now: Date, source: Source = .producers) -> Decision {
        let limit = source == .retries ? maximumBytes + Self.retryAllowanceBytes : maximumBytes
        guard body.count <= limit else {
            return .deadLetter(.oversize(bytes: body.count, limit: limit))
        }
        let document: JobDocument
        do {
            document = try JobDocument(json: Data(body))
        } catch {
            return .deadLetter(.malformed(error))
        }
        if source == .producers, document.job.retry != nil {
            return .deadLetter(.forgedRetryState)
        }
        if source == .producers, document.job.chunk != nil {
            return .deadLetter(.forgedChunkState)
        }
        // A producer's timestamp counts only up to now: one from a clock ahead of ours, or
        // forged (up to UInt64.max), would stretch a TTL past what the job asked for, put the
        // retry policy's maximum age out of reach and overflow `apns-expiration`.
        let published = publishedAt.map { min(Date(timeIntervalSince1970: TimeInterval($0)), now) }
        let firstAttemptAt = document.job.retry?.firstAttemptAt ?? published ?? now
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

    /// Past its expiry: not worth sending. `ttl_seconds: 0` means "now or never" (APNs's
    /// `apns-expiration: 0`): a first attempt is still made, never a later one.
    func hasExpired(now: Date) -> Bool {
        if job.delivery.ttlSeconds == 0 { return attempt > 1 }
        guard let expiresAt else { return false }
        return expiresAt <= now
    }

    /// `apns-expiration`: 0 for `ttl_seconds: 0` (deliver once, do not store), else the
    /// expiry in epoch seconds, else absent (APNs's own storage).
    var apnsExpiration: Int64? {
        if job.delivery.ttlSeconds == 0 { return 0 }
        return expiresAt.map { Int64($0.timeIntervalSince1970) }
    }

    /// Device ids a retry attempt is limited to; nil on a first attempt (all recipients).
    var retryDeviceIDs: [Int64]? {
        guard let ids = job.retry?.deviceIDs, !ids.isEmpty else { return nil }
        return ids
    }
}
