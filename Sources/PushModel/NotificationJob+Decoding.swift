import Foundation

/// Why a message is not a valid job. The worker dead-letters the message with this text in
/// a header, so it names the field and what is wrong with it.
public struct JobValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let problem: String

    public init(_ path: String, _ problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String { path.isEmpty ? problem : "\(path): \(problem)" }
}

extension NotificationJob {
    /// Parses and validates a job. Unknown fields are ignored; a missing required field, a
    /// wrong type or an out-of-range value is a `JobValidationError`.
    public init(json: Data) throws(JobValidationError) {
        self = try JobDocument(json: json).job
    }

    init(reading job: FieldReader) throws(JobValidationError) {
        try job.requireObject()
        let version = try job.int("version")
        guard version == NotificationJob.currentVersion else {
            throw JobValidationError("version", "unsupported job version \(version); this worker reads version \(NotificationJob.currentVersion)")
        }
        chunk = try Self.chunk(reading: job)
        // A chunk's id is its original's plus "#<n>", so it may be a little longer.
        jobID = try job.string("job_id", maxBytes: NotificationJob.maximumJobIDLength + (chunk == nil ? 0 : Chunk.maximumSuffixLength))
        guard !jobID.isEmpty, jobID.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw JobValidationError("job_id", "must be 1 to \(NotificationJob.maximumJobIDLength) printable ASCII characters without spaces")
        }
        report = try Self.report(reading: job)

        let app = try job.object("app")
        self.app = App(
            iosBundleID: try app.optionalString("ios_bundle_id", length: 1...255, matching: Self.isAppIdentifier,
                                                 "letters, digits, '.', '_', '-', starting with a letter or digit"),
            fcmProjectID: try app.optionalString("fcm_project_id", length: 1...255, matching: Self.isAppIdentifier,
                                                  "letters, digits, '.', '_', '-', starting with a letter or digit"),
            experienceID: try app.optionalString("experience_id", length: 0...255, matching: Self.isExpoExperience,
                                                  "\"@owner/slug\""),
            scopeKey: try app.optionalString("scope_key", length: 1...255))
        guard self.app.iosBundleID != nil || self.app.fcmProjectID != nil else {
            throw JobValidationError("app", "needs ios_bundle_id, fcm_project_id or both")
        }

        pushType = try Self.pushType(reading: job)
        liveActivity = try Self.liveActivity(reading: job, pushType: pushType)
        recipients = liveActivity?.isBroadcast == true ? .recipientIDs([]) : try Self.recipients(reading: job)

        if let content = try job.optionalObject("content") {
            var sender: Sender?
            if let senderReader = try content.optionalObject("sender") {
                let avatar = try senderReader.optionalString("avatarUrl", length: 0...2048)
                if let avatar, !avatar.hasPrefix("https://") {
                    throw JobValidationError("content.sender.avatarUrl", "must be an https:// URL")
                }
                sender = Sender(
                    id: try senderReader.string("id", length: 1...255),
                    displayName: try senderReader.string("displayName", length: 1...255),
                    avatarURL: avatar)
            }
            self.content = Content(
                title: try content.optionalString("title", maxBytes: 4096) ?? "",
                message: try content.optionalString("message", maxBytes: 4096) ?? "",
                data: try content.optionalObjectValue("data") ?? [:],
                sender: sender)
        } else {
            self.content = nil
        }

        let fallback = liveActivity == nil ? try job.object("fallback") : try job.optionalObject("fallback")
        self.fallback = try fallback.map { (fallback) throws(JobValidationError) in
            Fallback(title: try fallback.string("title", length: 0...256), message: try fallback.string("message", length: 1...1024))
        } ?? Fallback(title: "", message: "")

        if let presentation = try job.optionalObject("presentation") {
            let badge = try presentation.optionalInt("badge")
            if let badge, badge < 0 || badge > Int64(Int32.max) {
                throw JobValidationError("presentation.badge", "must be between 0 and \(Int32.max)")
            }
            self.presentation = Presentation(
                threadID: try presentation.optionalString("thread_id", length: 1...256),
                category: try presentation.optionalString("category", length: 1...256),
                sound: try presentation.optionalString("sound", length: 1...256),
                badge: badge.map { Int($0) },
                androidChannelID: try presentation.optionalString("android_channel_id", length: 1...256))
        } else {
            self.presentation = Presentation()
        }

        if let delivery = try job.optionalObject("delivery") {
            let priorityText = try delivery.optionalString("priority", maxBytes: 16) ?? "high"
            guard let priority = Delivery.Priority(rawValue: priorityText) else {
                throw JobValidationError("delivery.priority", "must be \"high\" or \"normal\", got \"\(priorityText)\"")
            }
            let ttl = try delivery.optionalInt("ttl_seconds")
            if let ttl, ttl < 0 || ttl > 2_419_200 {
                throw JobValidationError("delivery.ttl_seconds", "must be between 0 and 2419200 (28 days)")
            }
            let expiresAt = try delivery.optionalInt("expires_at")
            if expiresAt != nil && ttl != nil {
                throw JobValidationError("delivery", "give expires_at or ttl_seconds, not both")
            }
            if let expiresAt, expiresAt < 0 || expiresAt > NotificationJob.latestExpiresAt {
                throw JobValidationError(
                    "delivery.expires_at", "must be epoch seconds between 0 and \(NotificationJob.latestExpiresAt) (9999-12-31T23:59:59Z)")
            }
            let collapseID = try delivery.optionalString("collapse_id", maxBytes: 64)
            if let collapseID, collapseID.isEmpty || !collapseID.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
                throw JobValidationError("delivery.collapse_id", "must be printable ASCII without spaces")
            }
            self.delivery = Delivery(
                priority: priority, expiresAt: expiresAt, ttlSeconds: ttl, collapseID: collapseID, lane: try Self.lane(reading: delivery))
        } else {
            self.delivery = Delivery()
        }

        if let retry = try job.optionalObject("retry") {
            let attempt = try retry.int("attempt")
            guard attempt >= 1 else { throw JobValidationError("retry.attempt", "must be 1 or more") }
            let deviceIDs = try retry.optionalIntArray("device_ids") ?? []
            if try retry.optionalIntArray("device_ids")?.isEmpty == true {
                throw JobValidationError("retry.device_ids", "must not be empty")
            }
            guard deviceIDs.count <= NotificationJob.maximumRetryDevices else {
                throw JobValidationError("retry.device_ids", "has \(deviceIDs.count) entries; at most \(NotificationJob.maximumRetryDevices)")
            }
            let firstText = try retry.string("first_attempt_at", maxBytes: 64)
            guard let first = RFC3339.date(from: firstText) else {
                throw JobValidationError("retry.first_attempt_at", "must be an RFC 3339 timestamp")
            }
            self.retry = RetryState(attempt: Int(attempt), firstAttemptAt: first, deviceIDs: deviceIDs)
        } else {
            self.retry = nil
        }
    }

    private static func recipients(reading job: FieldReader) throws(JobValidationError) -> Recipients {
        let recipients = try job.object("recipients")
        let recipientIDs = try recipients.optionalStringArray("recipient_ids")
        let deviceIDs = try recipients.optionalIntArray("device_ids")
        switch (recipientIDs, deviceIDs) {
        case (let ids?, nil):
            try Self.checkCount(ids.count, "recipients.recipient_ids")
            return .recipientIDs(ids)
        case (nil, let ids?):
            try Self.checkCount(ids.count, "recipients.device_ids")
            return .deviceIDs(ids)
        default:
            throw JobValidationError("recipients", "needs exactly one of recipient_ids or device_ids")
        }
    }

    /// `^[A-Za-z0-9][A-Za-z0-9._-]*$`, the schema's pattern for bundle and project ids.
    static func isAppIdentifier(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic || ("0"..."9").contains(first) else {
            return false
        }
        return text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || ".-_".unicodeScalars.contains(scalar))
        }
    }

    /// `^@[^/\s]+/[^/\s]+$`, the schema's pattern for Expo's experience id.
    static func isExpoExperience(_ text: String) -> Bool {
        guard text.hasPrefix("@") else { return false }
        let parts = text.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { part in
            !part.isEmpty && !part.unicodeScalars.contains { $0.properties.isWhitespace }
        }
    }

    private static func checkCount(_ count: Int, _ path: String) throws(JobValidationError) {
        guard count >= 1 else { throw JobValidationError(path, "must not be empty") }
        guard count <= maximumRecipients else {
            throw JobValidationError(path, "has \(count) entries; at most \(maximumRecipients) per job")
        }
    }
}

/// Reads typed fields out of a JSON object, naming the full path in every error.
struct FieldReader {
    let value: JSONValue
    let path: String

    init(_ value: JSONValue, path: String) {
        self.value = value
        self.path = path
    }

    private func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func requireObject() throws(JobValidationError) {
        guard case .object = value else { throw JobValidationError(path, "must be a JSON object") }
    }

    /// nil only when the key is missing: `null` is a value of the wrong type, as the schema
    /// reads it.
    private func field(_ key: String) -> JSONValue? {
        guard case .object(let fields) = value, let field = fields[key] else { return nil }
        return field
    }

    /// A string whose length in Unicode code points (how JSON Schema counts `minLength` and
    /// `maxLength`) is within `length`, and that `matching` accepts.
    func string(_ key: String, length: ClosedRange<Int>) throws(JobValidationError) -> String {
        guard let text = try optionalString(key, length: length) else {
            throw JobValidationError(child(key), "is required")
        }
        return text
    }

    func optionalString(
        _ key: String, length: ClosedRange<Int>, matching rule: (String) -> Bool = { _ in true }, _ ruleText: String = ""
    ) throws(JobValidationError) -> String? {
        guard let text = try optionalString(key, maxBytes: .max) else { return nil }
        let count = text.unicodeScalars.count
        guard length.contains(count) else {
            throw JobValidationError(child(key), "is \(count) characters; must be \(length.lowerBound) to \(length.upperBound)")
        }
        guard rule(text) else { throw JobValidationError(child(key), "must be \(ruleText)") }
        return text
    }

    func string(_ key: String, maxBytes: Int) throws(JobValidationError) -> String {
        guard let text = try optionalString(key, maxBytes: maxBytes) else {
            throw JobValidationError(child(key), "is required")
        }
        return text
    }

    func optionalString(_ key: String, maxBytes: Int) throws(JobValidationError) -> String? {
        guard let field = field(key) else { return nil }
        guard case .string(let text) = field else { throw JobValidationError(child(key), "must be a string") }
        guard text.utf8.count <= maxBytes else {
            throw JobValidationError(child(key), "is \(text.utf8.count) bytes; at most \(maxBytes)")
        }
        return text
    }

    func int(_ key: String) throws(JobValidationError) -> Int64 {
        guard let number = try optionalInt(key) else { throw JobValidationError(child(key), "is required") }
        return number
    }

    func optionalInt(_ key: String) throws(JobValidationError) -> Int64? {
        guard let field = field(key) else { return nil }
        guard case .number(let number) = field, number == number.rounded(), abs(number) < 9e15 else {
            throw JobValidationError(child(key), "must be an integer")
        }
        return Int64(number)
    }

    func object(_ key: String) throws(JobValidationError) -> FieldReader {
        guard let reader = try optionalObject(key) else { throw JobValidationError(child(key), "is required") }
        return reader
    }

    func optionalObject(_ key: String) throws(JobValidationError) -> FieldReader? {
        guard let field = field(key) else { return nil }
        guard case .object = field else { throw JobValidationError(child(key), "must be a JSON object") }
        return FieldReader(field, path: child(key))
    }

    func optionalObjectValue(_ key: String) throws(JobValidationError) -> [String: JSONValue]? {
        guard let field = field(key) else { return nil }
        guard case .object(let fields) = field else { throw JobValidationError(child(key), "must be a JSON object") }
        return fields
    }

    func optionalStringArray(_ key: String) throws(JobValidationError) -> [String]? {
        guard let field = field(key) else { return nil }
        guard case .array(let items) = field else { throw JobValidationError(child(key), "must be an array of strings") }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            // A text of at most 1024 UTF-8 bytes has at most 1024 scalars: counted only past
            // that (this runs for every recipient of every job).
            guard case .string(let text) = item, !text.isEmpty, text.utf8.count <= 1024 || text.unicodeScalars.count <= 1024 else {
                throw JobValidationError("\(child(key))[\(index)]", "must be a non-empty string of at most 1024 characters")
            }
            strings.append(text)
        }
        return strings
    }

    func optionalIntArray(_ key: String) throws(JobValidationError) -> [Int64]? {
        guard let field = field(key) else { return nil }
        guard case .array(let items) = field else { throw JobValidationError(child(key), "must be an array of integers") }
        var numbers: [Int64] = []
        numbers.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            // 2^53 - 1: the largest integer every JSON parser (and this one's Double) reads exactly.
            guard case .number(let number) = item, number == number.rounded(), number >= 1, number <= 9_007_199_254_740_991 else {
                throw JobValidationError("\(child(key))[\(index)]", "must be an integer from 1 to 9007199254740991")
            }
            numbers.append(Int64(number))
        }
        return numbers
    }
}
