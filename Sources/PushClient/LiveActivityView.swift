/// What a Live Activity shows after a push: the event, the content-state the widget
/// renders (clear props with the decrypted PII merged in, never `encrypted_data`), and the
/// rest of `aps` that ActivityKit uses.
public struct LiveActivityView: Sendable, Equatable {
    /// `start`, `update` or `end`.
    public var event: String
    public var timestamp: Int?
    /// `content-state.name`; nil for an `end` without a final state.
    public var name: String?
    /// What the widget renders: the clear props, then the enrichment merged over them.
    public var props: [String: PayloadValue]
    public var attributesType: String?
    public var attributes: [String: PayloadValue]?
    public var alert: LiveActivityAlert?
    public var staleDate: Int?
    public var dismissalDate: Int?
    public var relevanceScore: Double?
    public var enrichment: EnrichmentStatus
    /// The staging key whose enrichment was merged at render time, if any.
    public var mergedStagingKey: String?

    public init(event: String, props: [String: PayloadValue] = [:], enrichment: EnrichmentStatus = .notEnriched) {
        self.event = event
        self.props = props
        self.enrichment = enrichment
    }
}

/// The clear lock-screen alert of a start or update.
public struct LiveActivityAlert: Sendable, Equatable {
    public var title: String
    public var body: String
    public var sound: String?

    public init(title: String, body: String, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }
}

/// What happened to the private part of a Live Activity push.
public enum EnrichmentStatus: Sendable, Equatable {
    /// This push carried sealed PII: decrypted, merged and staged. `avatarFile` is the local
    /// URL the avatar was downloaded to (nil: no avatar, or its download failed and the
    /// remote URL was kept).
    case enriched(avatarFile: String?)
    /// This push carried nothing sealed (a broadcast, a keyless device, no private fields).
    case notEnriched
    /// Sealed PII that could not be opened: the widget shows its non-PII layout (with an
    /// enrichment staged by an earlier push, if any); the next launch retries.
    case fallback(FallbackReason)
}

/// The result of reading a Live Activity push.
public struct LiveActivityReading: Sendable, Equatable {
    public var view: LiveActivityView
    /// Set when the payload is one ActivityKit would not apply at all.
    public var malformed: FallbackReason?
}
