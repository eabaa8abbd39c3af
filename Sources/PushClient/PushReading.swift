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
    /// Reads any push payload: `{"aps":…}` (alert or Live Activity), `{"message":{"data":…}}`
    /// (an FCM v1 request body) or a bare FCM data map.
    public func readAny(json: some Collection<UInt8>) async -> PushReading {
        guard let value = PayloadValue(json: Array(json)), value.objectValue != nil else {
            return .alert(AlertReading(display: DisplayedNotification(platform: .ios, title: "", body: ""),
                                       fallbackReason: .malformedPayload("not a JSON object")))
        }
        if value["aps"] != nil {
            if Self.isLiveActivity(value) { return .liveActivity(await read(value)) }
            return .alert(reader.readAPNs(value))
        }
        if let data = value["message"]?["data"] { return .alert(reader.readFCM(data)) }
        return .alert(reader.readFCM(value))
    }
}
