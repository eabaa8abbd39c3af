/// What the phone shows for an alert: the text, how it is grouped and presented, the data
/// the app receives when the user taps it, and for a communication notification the sender.
public struct DisplayedNotification: Sendable, Equatable {
    public enum Platform: String, Sendable {
        case ios, android
    }

    public var platform: Platform
    public var title: String
    public var body: String
    /// APNs `aps.subtitle` or the FCM `subtitle` value.
    public var subtitle: String?
    /// APNs `thread-id`: groups notifications (and is the conversation of a communication
    /// notification).
    public var threadID: String?
    public var category: String?
    public var sound: String?
    public var badge: Int?
    /// FCM `channelId` (Android notification channel).
    public var androidChannelID: String?
    /// The data object expo-notifications hands to the app (`userInfo["body"]`, Android's
    /// decoded `body`); includes `sender` when there is one.
    public var data: [String: PayloadValue]
    public var experienceID: String?
    public var scopeKey: String?
    /// Present only when the content was decrypted and names a sender.
    public var sender: Sender?

    public init(
        platform: Platform, title: String, body: String, subtitle: String? = nil, threadID: String? = nil,
        category: String? = nil, sound: String? = nil, badge: Int? = nil, androidChannelID: String? = nil,
        data: [String: PayloadValue] = [:], experienceID: String? = nil, scopeKey: String? = nil, sender: Sender? = nil
    ) {
        self.platform = platform
        self.title = title
        self.body = body
        self.subtitle = subtitle
        self.threadID = threadID
        self.category = category
        self.sound = sound
        self.badge = badge
        self.androidChannelID = androidChannelID
        self.data = data
        self.experienceID = experienceID
        self.scopeKey = scopeKey
        self.sender = sender
    }

    /// The `INSendMessageIntent` the iOS extension donates for a communication notification;
    /// nil without a sender.
    public var communicationIntent: CommunicationIntent? {
        sender.map { CommunicationIntent(sender: $0, conversationIdentifier: threadID ?? $0.id, content: body) }
    }
}

/// The sender of a communication notification, as the sealed content carries it in
/// `body.sender`: `{"id", "displayName", "avatarUrl"?}`.
public struct Sender: Sendable, Equatable {
    public var id: String
    public var displayName: String
    public var avatarURL: String?

    public init(id: String, displayName: String, avatarURL: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.avatarURL = avatarURL
    }

    /// nil unless `id` and `displayName` are strings (and `avatarUrl`, if present, too):
    /// an app's own `sender` field of another shape is left as data, not shown as a person.
    init?(_ value: PayloadValue?) {
        guard let fields = value?.objectValue, let id = fields["id"]?.stringValue,
              let displayName = fields["displayName"]?.stringValue else { return nil }
        switch fields["avatarUrl"] {
        case nil, .null?: avatarURL = nil
        case .string(let url)?: avatarURL = url
        default: return nil
        }
        self.id = id
        self.displayName = displayName
    }
}

/// The fields of `INSendMessageIntent` and its sender `INPerson`, so the extension's
/// Apple-only code is a straight copy:
///
///     let person = INPerson(personHandle: INPersonHandle(value: senderPersonHandle, type: .unknown),
///                           nameComponents: nil, displayName: senderDisplayName,
///                           image: senderImageURL.flatMap(URL.init(string:)).map(INImage.init(url:)),
///                           contactIdentifier: nil, customIdentifier: senderCustomIdentifier)
///     INSendMessageIntent(recipients: nil, outgoingMessageType: .outgoingMessageText, content: content,
///                         speakableGroupName: nil, conversationIdentifier: conversationIdentifier,
///                         serviceName: nil, sender: person, attachments: nil)
public struct CommunicationIntent: Sendable, Equatable {
    public var senderPersonHandle: String
    public var senderCustomIdentifier: String
    public var senderDisplayName: String
    /// Remote URL: the extension downloads it into an `INImage` (the company logo).
    public var senderImageURL: String?
    /// Stable per conversation: the thread id, else the sender id.
    public var conversationIdentifier: String
    public var content: String

    init(sender: Sender, conversationIdentifier: String, content: String) {
        senderPersonHandle = sender.id
        senderCustomIdentifier = sender.id
        senderDisplayName = sender.displayName
        senderImageURL = sender.avatarURL
        self.conversationIdentifier = conversationIdentifier
        self.content = content
    }
}

/// The result of reading an alert: what is shown, and why the fallback is shown if it is.
public struct AlertReading: Sendable, Equatable {
    public var display: DisplayedNotification
    /// nil when the private content was decrypted and shown.
    public var fallbackReason: FallbackReason?

    public var isDecrypted: Bool { fallbackReason == nil }
}
