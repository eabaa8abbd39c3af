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

    private let sharedData: [(key: String, value: String)]
    private let android: String

    /// - Parameters:
    ///   - collapseKey: replaces an undelivered earlier message with the same key. Only when
    ///     the job asks for it (`delivery.collapse_id`): FCM keeps at most four collapse keys
    ///     per offline device, so a key per job would silently drop notifications.
    ///   - ttlSeconds: how long FCM keeps the message for an offline device (nil: FCM's default).
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
        self.sharedData = data.map { (key: $0.0, value: $0.1) }
        var android = "{\"priority\":\"\(priority.rawValue)\""
        if let ttlSeconds { android += ",\"ttl\":\"\(max(0, ttlSeconds))s\"" }
        if let collapseKey { android += ",\"collapse_key\":" + JSONWriter.quoted(collapseKey) }
        self.android = android + "}"
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
        var dataSize = 0
        var json: [UInt8] = []
        json.reserveCapacity(160 + token.utf8.count + (quotedEncryptedData?.count ?? 0) + sharedSize)
        func append(_ text: StaticString) { text.withUTF8Buffer { json.append(contentsOf: $0) } }
        append("{\"message\":{\"token\":")
        JSONText.appendQuoted(token, to: &json)
        append(",\"data\":{")
        var first = true
        func add(_ key: String, _ value: String) {
            if !first { json.append(UInt8(ascii: ",")) }
            first = false
            JSONText.appendQuoted(key, to: &json)
            json.append(UInt8(ascii: ":"))
            JSONText.appendQuoted(value, to: &json)
            dataSize += key.utf8.count + value.utf8.count
        }
        if let quotedEncryptedData {
            first = false
            append("\"encrypted_data\":")
            json.append(contentsOf: quotedEncryptedData)
            dataSize += "encrypted_data".utf8.count + encryptedDataLength
        }
        for (key, value) in sharedData { add(key, value) }
        append("},\"android\":")
        json.append(contentsOf: android.utf8)
        append("}}")
        guard dataSize <= PayloadLimits.fcmData else {
            throw .tooLarge(bytes: dataSize, limit: PayloadLimits.fcmData)
        }
        return json
    }

    /// Bytes of the shared data and the android block, quoted, to size each body's buffer.
    private var sharedSize: Int {
        sharedData.reduce(android.utf8.count) { $0 + $1.key.utf8.count + $1.value.utf8.count + 6 }
    }
}
