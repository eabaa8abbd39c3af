/// Builds the APNs alert payload for every device of one job.
///
///     {"aps":{"alert":{"title":<fallback>,"body":<fallback>},"mutable-content":1,
///             "thread-id":…,"category":…,"sound":…,"badge":…},
///      "encrypted_data":"<envelope JSON as a string>","experienceId":…,"scopeKey":…}
///
/// `aps.alert` holds only the fallback text: it is what the phone shows if the extension
/// cannot decrypt (before first unlock, an old app), and the extension runs only when
/// `mutable-content` is 1 and the alert has a title or body. A device without a key gets
/// the same payload without `encrypted_data` (and without `mutable-content`): private
/// content never travels unencrypted.
///
/// The parts that are the same for every device are rendered once; per device only the
/// envelope is spliced in.
public struct APNsPayloadTemplate: Sendable {
    private let aps: String
    private let trailer: String
    private let legacyPayload: [UInt8]

    public init(job: NotificationJob) {
        func aps(mutable: Bool) -> String {
            var fields = "{\"alert\":{\"title\":" + JSONWriter.quoted(job.fallback.title)
                + ",\"body\":" + JSONWriter.quoted(job.fallback.message) + "}"
            if mutable { fields += ",\"mutable-content\":1" }
            let presentation = job.presentation
            if let thread = presentation.threadID { fields += ",\"thread-id\":" + JSONWriter.quoted(thread) }
            if let category = presentation.category { fields += ",\"category\":" + JSONWriter.quoted(category) }
            if let sound = presentation.sound { fields += ",\"sound\":" + JSONWriter.quoted(sound) }
            if let badge = presentation.badge { fields += ",\"badge\":\(badge)" }
            return fields + "}"
        }
        var trailer = ""
        if let experience = job.app.experienceID { trailer += ",\"experienceId\":" + JSONWriter.quoted(experience) }
        if let scope = job.app.scopeKey { trailer += ",\"scopeKey\":" + JSONWriter.quoted(scope) }
        trailer += "}"
        self.aps = "{\"aps\":" + aps(mutable: true) + ",\"encrypted_data\":"
        self.trailer = trailer
        self.legacyPayload = Array(("{\"aps\":" + aps(mutable: false) + trailer).utf8)
    }

    /// The payload for one device: `encryptedData` is its envelope JSON, or nil for a
    /// device without a key.
    public func payload(encryptedData: String?) throws(PayloadError) -> [UInt8] {
        try payload(quotedEncryptedData: encryptedData.map { encryptedData in
            var quoted: [UInt8] = []
            quoted.reserveCapacity(encryptedData.utf8.count + 40)
            JSONStringBytes.append(encryptedData, to: &quoted)
            return quoted
        })
    }

    /// The payload for one device whose envelope JSON comes already written as a JSON
    /// string value (quotes included), nil for a device without a key: spliced in as it is
    /// (the worker's hot path).
    public func payload(quotedEncryptedData: [UInt8]?) throws(PayloadError) -> [UInt8] {
        guard let quotedEncryptedData else { return try checked(legacyPayload) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(aps.utf8.count + quotedEncryptedData.count + trailer.utf8.count)
        // The job's parts are shared by the threads that seal: appended from where they lie,
        // not through `append(contentsOf:)`, which takes (retains) its argument.
        aps.withUTF8InPlace { bytes.append(contentsOf: $0) }
        quotedEncryptedData.withUnsafeBufferPointer { bytes.append(contentsOf: $0) }
        trailer.withUTF8InPlace { bytes.append(contentsOf: $0) }
        return try checked(bytes)
    }

    private func checked(_ bytes: [UInt8]) throws(PayloadError) -> [UInt8] {
        guard bytes.count <= PayloadLimits.apns else { throw .tooLarge(bytes: bytes.count, limit: PayloadLimits.apns) }
        return bytes
    }
}

/// Byte-level JSON string quoting for the per-device hot path (an envelope is ~2 KB of
/// base64 whose only special characters are its quotes): the runs between escapes are
/// copied in one piece each.
enum JSONStringBytes {
    static func append(_ text: String, to bytes: inout [UInt8]) {
        text.withUTF8InPlace { source in
            bytes.append(UInt8(ascii: "\""))
            var start = 0
            for index in source.indices {
                let byte = source[index]
                guard byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[start..<index]))
                start = index + 1
                if byte < 0x20 {
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                              hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                } else {
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(byte)
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[start...]))
            bytes.append(UInt8(ascii: "\""))
        }
    }
}
