/// The phone's reading of an alert push, as the iOS notification service extension and the
/// Android messaging service do it: decrypt `encrypted_data` with the device key and show
/// the sealed content, or show the clear fallback text and say why.
///
/// Pure and synchronous; all input is untrusted. It never crashes on malformed input and
/// never mixes decrypted and fallback content: the sealed content is shown only when it
/// authenticated and has the expected layout, otherwise the payload's fallback is shown
/// as it arrived.
public struct NotificationReader: Sendable {
    public let keyStore: any KeyStore

    public init(keyStore: any KeyStore) {
        self.keyStore = keyStore
    }

    /// Reads an APNs `userInfo` (the payload JSON as APNs delivered it).
    ///
    /// iOS runs the extension only when `aps.mutable-content` is 1 and the alert has a title,
    /// subtitle or body; otherwise the alert is shown as sent, so a payload with
    /// `encrypted_data` that fails this test is reported as malformed.
    public func readAPNs(_ userInfo: PayloadValue) -> AlertReading {
        guard let root = userInfo.objectValue else {
            return AlertReading(display: DisplayedNotification(platform: .ios, title: "", body: ""),
                                fallbackReason: .malformedPayload("the payload is not a JSON object"))
        }
        let fallback = Self.apnsFallback(root)
        guard let aps = root["aps"]?.objectValue else {
            return AlertReading(display: fallback, fallbackReason: .malformedPayload("no aps dictionary"))
        }
        guard let sealed = root["encrypted_data"] else {
            return AlertReading(display: fallback, fallbackReason: .legacyPayload)
        }
        let hasText = !fallback.title.isEmpty || !fallback.body.isEmpty || fallback.subtitle != nil
        guard aps["mutable-content"]?.integerValue == 1, hasText else {
            return AlertReading(display: fallback, fallbackReason: .malformedPayload(
                "aps.mutable-content is not 1 or the alert has no text: the notification service extension would not run"))
        }
        return open(sealed, over: fallback)
    }

    /// Reads an FCM data map (every value a string), as the Android service receives it.
    public func readFCM(_ data: [String: String]) -> AlertReading {
        let fallback = Self.fcmFallback(data)
        guard let sealed = data["encrypted_data"] else {
            return AlertReading(display: fallback, fallbackReason: .legacyPayload)
        }
        return open(.string(sealed), over: fallback)
    }

    /// The sealed content over the fallback, or the fallback as it arrived with the reason.
    private func open(_ sealed: PayloadValue, over fallback: DisplayedNotification) -> AlertReading {
        switch decryptObject(sealed).flatMap({ Self.merge($0, over: fallback) }) {
        case .failure(let reason): return AlertReading(display: fallback, fallbackReason: reason)
        case .success(let display): return AlertReading(display: display, fallbackReason: nil)
        }
    }

    /// Reads an FCM data map given as JSON; a value that is not a string (FCM would have
    /// refused the message) makes the payload malformed.
    public func readFCM(_ data: PayloadValue) -> AlertReading {
        guard let fields = data.objectValue else {
            return AlertReading(display: DisplayedNotification(platform: .android, title: "", body: ""),
                                fallbackReason: .malformedPayload("the FCM data is not an object"))
        }
        var strings: [String: String] = [:]
        for (key, value) in fields {
            if let text = value.stringValue { strings[key] = text }
        }
        guard strings.count == fields.count else {
            let display = Self.fcmFallback(strings)
            return AlertReading(display: display, fallbackReason: .malformedPayload("an FCM data value is not a string"))
        }
        return readFCM(strings)
    }
}
