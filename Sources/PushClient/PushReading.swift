/// Any push as a phone receives it, told apart by its shape: an APNs alert, a Live Activity
/// push, or an FCM message (its data map, or the whole HTTP v1 request body as a provider
/// emulator records it).
public enum PushReading: Sendable, Equatable {
    case alert(AlertReading)
    case liveActivity(LiveActivityReading)

    /// The fallback reason, or the reason the payload is malformed; nil when the private
    /// content was shown (or there was none to show, for a Live Activity).
    public var fallbackReason: FallbackReason? {
        switch self {
        case .alert(let reading): return reading.fallbackReason
        case .liveActivity(let reading):
            if let malformed = reading.malformed { return malformed }
            if case .fallback(let reason) = reading.view.enrichment { return reason }
            return nil
        }
    }
}

extension LiveActivityEnricher {
    /// Reads any push payload as a phone of `platform` would: on iOS an APNs `userInfo`
    /// (alert or Live Activity), on Android an FCM v1 request body `{"message":{"data":…}}`
    /// (as a provider emulator records it) or a bare data map. Without a platform it is
    /// guessed from the shape: `aps` means iOS.
    public func readAny(json: some Collection<UInt8>, platform: DisplayedNotification.Platform? = nil) async -> PushReading {
        guard let value = PayloadValue(json: Array(json)), value.objectValue != nil else {
            return .alert(AlertReading(display: DisplayedNotification(platform: platform ?? .ios, title: "", body: ""),
                                       fallbackReason: .malformedPayload("not a JSON object")))
        }
        switch platform ?? (value["aps"] != nil ? .ios : .android) {
        case .ios:
            if Self.isLiveActivity(value) { return .liveActivity(await read(value)) }
            return .alert(reader.readAPNs(value))
        case .android:
            // A data map has a `message` too: the fallback text, a string.
            if let message = value["message"], message.objectValue != nil { return .alert(reader.readFCM(message["data"] ?? .null)) }
            return .alert(reader.readFCM(value))
        }
    }
}
