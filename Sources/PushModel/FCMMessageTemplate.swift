import PushRuntime

/// Builds the FCM HTTP v1 request body for every Android device of one job.
///
///     {"message":{"token":…,"data":{"encrypted_data":…,"title":…,"message":…,"channelId":…,
///                 "experienceId":…,"scopeKey":…,"tag":…,…},"android":{"priority":"HIGH","ttl":"…s",
///                 "collapse_key":…}}}
///
/// Data-only, every value a string: expo-notifications on Android handles only data
/// messages (a `notification` block would bypass it). `title`/`message` are the fallback
/// text; the app's service decrypts `encrypted_data` and merges the real content over them.
public struct FCMMessageTemplate: Sendable {
    public enum Priority: String, Sendable {
        case high = "HIGH"
        case normal = "NORMAL"
    }

    /// The data fields every device's message carries, written once per job: each as
    /// `"key":"value"` after a comma, so a body splices them in as they are.
    private let sharedDataJSON: [UInt8]
    /// The bytes of the data's keys and values, which FCM's 4 KB data limit counts.
    private let sharedDataSize: Int
    /// The `android` block, written once per job.
    private let androidJSON: [UInt8]

    /// FCM's longest `android.ttl`, 28 days, which is also its default: a longer one is not a
    /// valid value, and a job that expires later (`delivery.expires_at`) is kept that long.
    public static let maximumTTLSeconds: Int64 = 2_419_200

    /// - Parameters:
    ///   - collapseKey: replaces an undelivered earlier message with the same key. Only when
    ///     the job asks for it (`delivery.collapse_id`): FCM keeps at most four collapse keys
    ///     per offline device, so a key per job would silently drop notifications.
    ///   - ttlSeconds: how long FCM keeps the message for an offline device (nil: FCM's default),
    ///     at most `maximumTTLSeconds`.
    ///   - notificationTag: expo-notifications' `tag`: a notification with the same tag
    ///     replaces the shown one, so a redelivered job does not show twice (what
    ///     `apns-collapse-id` does on iOS).
    public init(job: NotificationJob, priority: Priority, collapseKey: String?, ttlSeconds: Int64?, notificationTag: String? = nil) {
        var data: [(String, String)] = [("title", job.fallback.title), ("message", job.fallback.message)]
        let presentation = job.presentation
        if let channel = presentation.androidChannelID { data.append(("channelId", channel)) }
        if let sound = presentation.sound { data.append(("sound", sound)) }
        if let badge = presentation.badge { data.append(("badge", String(badge))) }
        if let category = presentation.category { data.append(("categoryId", category)) }
        if let experience = job.app.experienceID { data.append(("experienceId", experience)) }
        if let scope = job.app.scopeKey { data.append(("scopeKey", scope)) }
        if let notificationTag { data.append(("tag", notificationTag)) }
        var sharedDataJSON: [UInt8] = []
        for (key, value) in data {
            sharedDataJSON.append(UInt8(ascii: ","))
            JSONText.appendQuoted(key, to: &sharedDataJSON)
            sharedDataJSON.append(UInt8(ascii: ":"))
            JSONText.appendQuoted(value, to: &sharedDataJSON)
        }
        self.sharedDataJSON = sharedDataJSON
        self.sharedDataSize = data.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count }
        var android = "{\"priority\":\"\(priority.rawValue)\""
        if let ttlSeconds { android += ",\"ttl\":\"\(min(max(0, ttlSeconds), Self.maximumTTLSeconds))s\"" }
        if let collapseKey { android += ",\"collapse_key\":" + JSONWriter.quoted(collapseKey) }
        self.androidJSON = Array((android + "}").utf8)
    }

    /// The request body for one device; `encryptedData` nil for a device without a key.
    ///
    /// Written as bytes into one buffer sized up front: this runs once per Android device.
    public func body(token: String, encryptedData: String?) throws(PayloadError) -> [UInt8] {
        guard let encryptedData else { return try body(token: token, quotedEncryptedData: nil, encryptedDataLength: 0) }
        var quoted: [UInt8] = []
        quoted.reserveCapacity(encryptedData.utf8.count + 40)
        JSONText.appendQuoted(encryptedData, to: &quoted)
        return try body(token: token, quotedEncryptedData: quoted, encryptedDataLength: encryptedData.utf8.count)
    }

    /// The request body for one device whose envelope JSON comes already written as a JSON
    /// string value (quotes included), `encryptedDataLength` the length of the text it
    /// encodes (what FCM's data limit counts). Spliced in as it is: the worker's hot path.
    public func body(token: String, quotedEncryptedData: [UInt8]?, encryptedDataLength: Int) throws(PayloadError) -> [UInt8] {
        var dataSize = sharedDataSize
        var json: [UInt8] = []
        // 63 bytes of fixed text with an envelope (46 without), and room for a few escapes in
        // the token: too little, and every body was copied once into a buffer twice its size.
        json.reserveCapacity(80 + token.utf8.count + (quotedEncryptedData?.count ?? 0) + sharedDataJSON.count + androidJSON.count)
        // Appended through static functions taking the buffer `inout`: local functions that
        // captured it made every append a run-time exclusivity check (five per message).
        // The job's parts are shared by the threads that seal: appended from where they lie,
        // not through `append(contentsOf:)`, which takes (retains) its argument.
        Self.append("{\"message\":{\"token\":", to: &json)
        JSONText.appendQuoted(token, to: &json)
        Self.append(",\"data\":{", to: &json)
        if let quotedEncryptedData {
            Self.append("\"encrypted_data\":", to: &json)
            Self.append(quotedEncryptedData, to: &json)
            dataSize += "encrypted_data".utf8.count + encryptedDataLength
            Self.append(sharedDataJSON, to: &json)
        } else {
            // No envelope: the shared fields open the object, without their leading comma.
            sharedDataJSON.withUnsafeBufferPointer { json.append(contentsOf: $0.dropFirst()) }
        }
        Self.append("},\"android\":", to: &json)
        Self.append(androidJSON, to: &json)
        Self.append("}}", to: &json)
        guard dataSize <= PayloadLimits.fcmData else {
            throw .tooLarge(bytes: dataSize, limit: PayloadLimits.fcmData)
        }
        return json
    }

    private static func append(_ text: StaticString, to json: inout [UInt8]) {
        text.withUTF8Buffer { json.append(contentsOf: $0) }
    }

    private static func append(_ bytes: borrowing [UInt8], to json: inout [UInt8]) {
        bytes.withUnsafeBufferPointer { json.append(contentsOf: $0) }
    }
}
