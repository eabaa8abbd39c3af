import Foundation

/// A notification job as producers publish it (`Schemas/job.v1.schema.json`).
///
/// Field names on the wire are snake_case except inside `content.sender`, whose keys are the
/// ones the phones read (`displayName`, `avatarUrl`). Unknown fields are ignored, so
/// producers may add their own.
public struct NotificationJob: Sendable, Equatable {
    public static let currentVersion = 1
    public static let maximumRecipients = 10_000
    /// Device ids one retry message may carry; a worker splits larger retries.
    public static let maximumRetryDevices = 10_000
    public static let maximumJobIDLength = 128
    /// The largest job body workers read (2 MiB); larger ones are dead-lettered unread, so
    /// producers refuse them first. 10,000 recipient ids fit in well under this.
    public static let maximumBodyBytes = 2 << 20
    /// The latest `delivery.expires_at`: 9999-12-31T23:59:59Z, the end of RFC 3339's range.
    /// Later values would overflow the conversions to `apns-expiration` and FCM's TTL.
    public static let latestExpiresAt: Int64 = 253_402_300_799

    public var jobID: String
    public var app: App
    /// Empty for a Live Activity broadcast, which is addressed by its channel.
    public var recipients: Recipients
    /// The private content; nil sends only the fallback text to every device.
    public var content: Content?
    /// Empty strings in a Live Activity job without `android_fallback` (which ignores it).
    public var fallback: Fallback
    public var presentation: Presentation
    public var delivery: Delivery
    public var pushType: PushType
    /// The Live Activity part; non-nil iff `pushType` is `.liveactivity`.
    public var liveActivity: LiveActivity?
    /// Set by workers when they re-publish a job for the devices that need a retry.
    public var retry: RetryState?
    /// Set by workers on the chunk jobs a large job is split into (`NotificationJob+Volume.swift`).
    public var chunk: Chunk?
    /// What the producer wants to hear back about the job (`report.completed_event`).
    public var report = Report()

    public struct App: Sendable, Equatable {
        public var iosBundleID: String?
        public var fcmProjectID: String?
        /// Expo's `experienceId` / `scopeKey` ("@owner/slug"), passed to the phone.
        public var experienceID: String?
        public var scopeKey: String?

        public init(iosBundleID: String? = nil, fcmProjectID: String? = nil, experienceID: String? = nil, scopeKey: String? = nil) {
            self.iosBundleID = iosBundleID
            self.fcmProjectID = fcmProjectID
            self.experienceID = experienceID
            self.scopeKey = scopeKey
        }
    }

    public enum Recipients: Sendable, Equatable {
        case recipientIDs([String])
        case deviceIDs([Int64])
    }

    /// The private part: only ever sent sealed.
    public struct Content: Sendable, Equatable {
        public var title: String
        public var message: String
        public var data: [String: JSONValue]
        public var sender: Sender?

        public init(title: String, message: String, data: [String: JSONValue] = [:], sender: Sender? = nil) {
            self.title = title
            self.message = message
            self.data = data
            self.sender = sender
        }
    }

    /// Who a communication notification is from; the iOS extension shows the avatar.
    public struct Sender: Sendable, Equatable {
        public var id: String
        public var displayName: String
        public var avatarURL: String?

        public init(id: String, displayName: String, avatarURL: String? = nil) {
            self.id = id
            self.displayName = displayName
            self.avatarURL = avatarURL
        }
    }

    /// What the phone shows when it cannot decrypt (before first unlock, old app version).
    /// Travels in clear text: it must not contain private data.
    public struct Fallback: Sendable, Equatable {
        public var title: String
        public var message: String

        public init(title: String, message: String) {
            self.title = title
            self.message = message
        }
    }

    public struct Presentation: Sendable, Equatable {
        public var threadID: String?
        public var category: String?
        public var sound: String?
        public var badge: Int?
        public var androidChannelID: String?

        public init(threadID: String? = nil, category: String? = nil, sound: String? = nil, badge: Int? = nil, androidChannelID: String? = nil) {
            self.threadID = threadID
            self.category = category
            self.sound = sound
            self.badge = badge
            self.androidChannelID = androidChannelID
        }
    }

    public struct Delivery: Sendable, Equatable {
        public enum Priority: String, Sendable {
            case high, normal
        }

        public var priority: Priority
        /// Absolute expiry (epoch seconds); nil means the services' default storage.
        public var expiresAt: Int64?
        /// Relative expiry, resolved against the job's first attempt.
        public var ttlSeconds: Int64?
        /// Explicit collapse id; by default one is derived from the job id.
        public var collapseID: String?
        /// The queue the job waits in: `urgent` (default) or `bulk`.
        public var lane: Lane

        public init(
            priority: Priority = .high, expiresAt: Int64? = nil, ttlSeconds: Int64? = nil, collapseID: String? = nil, lane: Lane = .urgent
        ) {
            self.priority = priority
            self.expiresAt = expiresAt
            self.ttlSeconds = ttlSeconds
            self.collapseID = collapseID
            self.lane = lane
        }
    }

    public enum PushType: String, Sendable {
        case alert
        /// An iOS Live Activity start, update, end or broadcast (`liveActivity`).
        case liveactivity
    }

    /// Worker-internal: how often this job was tried and for which devices.
    public struct RetryState: Sendable, Equatable {
        public var attempt: Int
        public var firstAttemptAt: Date
        public var deviceIDs: [Int64]

        public init(attempt: Int, firstAttemptAt: Date, deviceIDs: [Int64]) {
            self.attempt = attempt
            self.firstAttemptAt = firstAttemptAt
            self.deviceIDs = deviceIDs
        }
    }

    public init(
        jobID: String, app: App, recipients: Recipients, content: Content?, fallback: Fallback,
        presentation: Presentation = Presentation(), delivery: Delivery = Delivery(), pushType: PushType = .alert,
        retry: RetryState? = nil, liveActivity: LiveActivity? = nil
    ) {
        self.jobID = jobID
        self.app = app
        self.recipients = recipients
        self.content = content
        self.fallback = fallback
        self.presentation = presentation
        self.delivery = delivery
        self.pushType = pushType
        self.retry = retry
        self.liveActivity = liveActivity
    }
}
