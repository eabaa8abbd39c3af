/// The `live_activity` block of a job with `push_type: liveactivity` (`Schemas/live-activities.md`):
/// a push-to-start, an update or an end of an iOS Live Activity, addressed by recipients and
/// the producer's own activity id, or a broadcast to an APNs channel.
public struct LiveActivity: Sendable, Equatable {
    public enum Event: String, Sendable, CaseIterable {
        case start, update, end
    }

    /// `input_push` of a start: `token` asks iOS for the new activity's update token.
    public enum InputPush: String, Sendable {
        case token, none
    }

    /// `content-state = {name, props}`; `props` here are the clear ones only.
    public struct ContentState: Sendable, Equatable {
        public var name: String
        public var props: [String: JSONValue]

        public init(name: String, props: [String: JSONValue] = [:]) {
            self.name = name
            self.props = props
        }
    }

    /// `aps.alert`, in the clear on the lock screen.
    public struct Alert: Sendable, Equatable {
        public var title: String
        public var body: String
        public var sound: String?

        public init(title: String, body: String, sound: String? = nil) {
            self.title = title
            self.body = body
            self.sound = sound
        }
    }

    /// Which registry token a device kind of job is sent to.
    public enum TokenKind: String, Sendable {
        /// The device's push-to-start token (event start).
        case pushToStart = "push_to_start"
        /// The update token of the job's activity (events update and end).
        case activityUpdate = "activity_update"
    }

    public var event: Event
    /// Epoch seconds when the producer created the job: `aps.timestamp` on every attempt.
    public var timestamp: Int64
    /// The producer's id for the activity; nil only for a broadcast that gives none.
    public var activityID: String?
    /// Present = a broadcast to this APNs channel (base64, as APNs returned it).
    public var channelID: String?
    /// The APNs environment of the channel (broadcast only; devices carry their own).
    public var environment: PushEnvironment
    public var attributesType: String?
    public var attributes: [String: JSONValue]?
    public var contentState: ContentState?
    /// Sealed per device into `props.encrypted_data`; never sent in the clear.
    public var privateProps: [String: JSONValue]?
    public var alert: Alert?
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    /// `apns-priority`: 5 unless the job asks for 10 (which counts against Apple's hourly budget).
    public var priority: Int
    public var inputPush: InputPush
    /// Android devices of the recipients get the job's ordinary alert instead of nothing.
    public var androidFallback: Bool

    public init(
        event: Event, timestamp: Int64, activityID: String?, channelID: String? = nil, environment: PushEnvironment = .production,
        attributesType: String? = nil, attributes: [String: JSONValue]? = nil, contentState: ContentState? = nil,
        privateProps: [String: JSONValue]? = nil, alert: Alert? = nil, staleDate: Int64? = nil, dismissalDate: Int64? = nil,
        relevanceScore: Double? = nil, priority: Int = 5, inputPush: InputPush = .token, androidFallback: Bool = false
    ) {
        self.event = event
        self.timestamp = timestamp
        self.activityID = activityID
        self.channelID = channelID
        self.environment = environment
        self.attributesType = attributesType
        self.attributes = attributes
        self.contentState = contentState
        self.privateProps = privateProps
        self.alert = alert
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.priority = priority
        self.inputPush = inputPush
        self.androidFallback = androidFallback
    }

    public var isBroadcast: Bool { channelID != nil }

    /// The registry token a (non-broadcast) job of this event is sent to.
    public var tokenKind: TokenKind { event == .start ? .pushToStart : .activityUpdate }
}
