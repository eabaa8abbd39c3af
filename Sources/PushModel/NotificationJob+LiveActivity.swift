/// Reading and validating `live_activity` (`Schemas/job.v1.schema.json`, `Schemas/live-activities.md`):
/// every rule of the schema, plus those it cannot express (a private field repeated in the
/// clear props, the 16 KiB cap), so a job the worker accepts is one it can send.
extension NotificationJob {
    /// A broadcast reaches every subscriber of a channel with one payload: nothing in it can be
    /// sealed per device (README, "Live Activities").
    public static let broadcastPrivatePropsProblem =
        "a broadcast sends one payload to every subscriber of the channel and cannot be sealed per device; send private fields in per-recipient update jobs"

    /// `attributes`, `content_state` and `private_props` together, as JSON: anything larger
    /// could never fit APNs's 4 KB, so it is refused before any database work.
    public static let maximumLiveActivityBytes = 16 * 1024

    /// The `push_type` field (default alert).
    static func pushType(reading job: FieldReader) throws(JobValidationError) -> PushType {
        let text = try job.optionalString("push_type", maxBytes: 32) ?? "alert"
        guard let pushType = PushType(rawValue: text) else {
            throw JobValidationError("push_type", "must be \"alert\" or \"liveactivity\", got \"\(text)\"")
        }
        return pushType
    }

    /// The `live_activity` block of a Live Activity job, checked together with what it requires
    /// of the rest of the job; nil for an alert job (which must not have one).
    static func liveActivity(reading job: FieldReader, pushType: PushType) throws(JobValidationError) -> LiveActivity? {
        guard pushType == .liveactivity else {
            if job.has("live_activity") {
                throw JobValidationError("live_activity", "is only allowed with push_type \"liveactivity\"")
            }
            return nil
        }
        guard let block = try job.optionalObject("live_activity") else {
            throw JobValidationError("live_activity", "is required when push_type is \"liveactivity\"")
        }
        let activity = try LiveActivity(reading: block)
        guard try job.object("app").optionalString("ios_bundle_id", maxBytes: 255) != nil else {
            throw JobValidationError("app.ios_bundle_id", "is required for a Live Activity job (the topic is <bundle>.push-type.liveactivity)")
        }
        if activity.isBroadcast {
            if job.has("recipients") {
                throw JobValidationError("recipients", "a broadcast is addressed by live_activity.channel_id and must not have recipients")
            }
            if job.has("content") {
                throw JobValidationError("content", NotificationJob.broadcastPrivatePropsProblem)
            }
        }
        if activity.androidFallback {
            if !job.has("fallback") {
                throw JobValidationError("fallback", "is required with live_activity.android_fallback (the alert Android devices get)")
            }
        } else if job.has("content") {
            throw JobValidationError("content", "is only allowed with live_activity.android_fallback: true (the private part of the Android alert)")
        }
        if let delivery = try job.optionalObject("delivery") {
            for key in ["priority", "collapse_id"] where delivery.has(key) {
                throw JobValidationError("delivery.\(key)", "is not allowed in a Live Activity job (use live_activity.priority; Live Activity pushes carry no collapse id)")
            }
        }
        return activity
    }
}

extension LiveActivity {
    static let maximumEpochSeconds: Int64 = 9_999_999_999

    init(reading block: FieldReader) throws(JobValidationError) {
        let eventText = try block.string("event", maxBytes: 16)
        guard let event = Event(rawValue: eventText) else {
            throw JobValidationError("live_activity.event", "must be \"start\", \"update\" or \"end\", got \"\(eventText)\"")
        }
        self.event = event
        guard let timestamp = try Self.epochSeconds(block, "timestamp") else {
            throw JobValidationError("live_activity.timestamp", "is required: epoch seconds when the job was created")
        }
        self.timestamp = timestamp

        activityID = try block.optionalString("activity_id", maxBytes: 256)
        if let activityID, activityID.isEmpty || !activityID.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            throw JobValidationError("live_activity.activity_id", "must be 1 to 256 printable ASCII characters without spaces")
        }
        channelID = try block.optionalString("channel_id", maxBytes: 128)
        if let channelID, !Self.isChannelID(channelID) {
            throw JobValidationError("live_activity.channel_id", "must be the base64 channel id APNs returned (4 to 128 characters)")
        }
        let environmentText = try block.optionalString("environment", maxBytes: 16)
        if let environmentText {
            guard let environment = PushEnvironment(rawValue: environmentText) else {
                throw JobValidationError("live_activity.environment", "must be \"sandbox\" or \"production\"")
            }
            self.environment = environment
        } else {
            environment = .production
        }

        attributesType = try block.optionalString("attributes_type", maxBytes: 128)
        if let type = attributesType, !Self.isSwiftTypeName(type) {
            throw JobValidationError("live_activity.attributes_type", "must be an unqualified Swift type name, e.g. LiveActivityAttributes")
        }
        attributes = try block.optionalObjectValue("attributes")
        if let state = try block.optionalObject("content_state") {
            let name = try state.string("name", maxBytes: 256)
            guard !name.isEmpty else { throw JobValidationError("live_activity.content_state.name", "must not be empty") }
            contentState = ContentState(name: name, props: try state.optionalObjectValue("props") ?? [:])
        } else {
            contentState = nil
        }
        privateProps = try block.optionalObjectValue("private_props")
        if let alert = try block.optionalObject("alert") {
            let title = try alert.string("title", maxBytes: 256)
            let body = try alert.string("body", maxBytes: 1024)
            let sound = try alert.optionalString("sound", maxBytes: 256)
            guard !title.isEmpty, !body.isEmpty, sound?.isEmpty != true else {
                throw JobValidationError("live_activity.alert", "title, body and sound must not be empty")
            }
            self.alert = Alert(title: title, body: body, sound: sound)
        } else {
            alert = nil
        }
        staleDate = try Self.epochSeconds(block, "stale_date")
        dismissalDate = try Self.epochSeconds(block, "dismissal_date")
        relevanceScore = try block.optionalNumber("relevance_score")
        if let score = relevanceScore, !(0...1_000_000).contains(score) {
            throw JobValidationError("live_activity.relevance_score", "must be between 0 and 1000000")
        }
        let priority = try block.optionalInt("priority") ?? 5
        guard priority == 5 || priority == 10 else {
            throw JobValidationError("live_activity.priority", "must be 5 (default) or 10, got \(priority)")
        }
        self.priority = Int(priority)
        let inputText = try block.optionalString("input_push", maxBytes: 16)
        if let inputText {
            guard let input = InputPush(rawValue: inputText) else {
                throw JobValidationError("live_activity.input_push", "must be \"token\" or \"none\"")
            }
            inputPush = input
        } else {
            inputPush = .token
        }
        androidFallback = try block.optionalBool("android_fallback") ?? false

        try checkKinds(block)
        try checkPrivacy()
    }

    /// Which fields each event and kind needs or must not have.
    private func checkKinds(_ block: FieldReader) throws(JobValidationError) {
        func refuse(_ key: String, _ why: String) -> JobValidationError { JobValidationError("live_activity.\(key)", why) }
        if isBroadcast {
            if privateProps != nil { throw refuse("private_props", NotificationJob.broadcastPrivatePropsProblem) }
            if event == .start { throw refuse("event", "a broadcast is \"update\" or \"end\"; push-to-start goes to each device's token") }
            if androidFallback { throw refuse("android_fallback", "is not possible with a broadcast (it reaches iOS subscribers only)") }
        } else {
            if activityID == nil { throw refuse("activity_id", "is required for start, update and end (the producer's id for the activity)") }
            if block.has("environment") {
                throw refuse("environment", "is only for a broadcast (channel_id); devices carry their own environment")
            }
        }
        switch event {
        case .start:
            if attributesType == nil { throw refuse("attributes_type", "is required for start (ActivityKit matches by this type name)") }
            if attributes == nil { throw refuse("attributes", "is required for start") }
            if contentState == nil { throw refuse("content_state", "is required for start") }
            if alert == nil { throw refuse("alert", "is required for start") }
        case .update, .end:
            for key in ["attributes_type", "attributes", "input_push"] where block.has(key) {
                throw refuse(key, "is only allowed with event \"start\"")
            }
            if event == .update && contentState == nil { throw refuse("content_state", "is required for update") }
        }
        if event == .end {
            if alert != nil { throw refuse("alert", "is not allowed with event \"end\"") }
            if staleDate != nil { throw refuse("stale_date", "is not allowed with event \"end\"") }
        } else if dismissalDate != nil {
            throw refuse("dismissal_date", "is only allowed with event \"end\"")
        }
    }

    /// Private fields are only ever sealed: never repeated in the clear, never without the
    /// content state that carries them.
    private func checkPrivacy() throws(JobValidationError) {
        if let privateProps {
            guard !privateProps.isEmpty else {
                throw JobValidationError("live_activity.private_props", "must have at least one field (or be left out)")
            }
            guard contentState != nil else {
                throw JobValidationError("live_activity.private_props", "needs content_state (the sealed fields travel in its props)")
            }
        }
        if let props = contentState?.props {
            if props["encrypted_data"] != nil {
                throw JobValidationError("live_activity.content_state.props.encrypted_data", "is the worker's (the sealed private_props); do not set it")
            }
            for key in (privateProps ?? [:]).keys.sorted() where props[key] != nil {
                throw JobValidationError(
                    "live_activity.private_props.\(key)", "also present in content_state.props; a private field must never be sent in the clear")
            }
        }
        var size = 0
        if let attributes { size += JSONValue.object(attributes).jsonText.utf8.count }
        if let contentState { size += JSONValue.object(contentState.props).jsonText.utf8.count + contentState.name.utf8.count }
        if let privateProps { size += JSONValue.object(privateProps).jsonText.utf8.count }
        guard size <= NotificationJob.maximumLiveActivityBytes else {
            throw JobValidationError(
                "live_activity", "attributes, content_state and private_props are \(size) bytes of JSON; at most \(NotificationJob.maximumLiveActivityBytes) (the payload limit is 4096)")
        }
    }

    private static func epochSeconds(_ block: FieldReader, _ key: String) throws(JobValidationError) -> Int64? {
        guard let value = try block.optionalInt(key) else { return nil }
        guard (0...maximumEpochSeconds).contains(value) else {
            throw JobValidationError("live_activity.\(key)", "must be epoch seconds (0 to \(maximumEpochSeconds)), got \(value)")
        }
        return value
    }

    /// Standard base64 with padding only at the end, 4..128 characters.
    static func isChannelID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (4...128).contains(bytes.count) else { return false }
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        let padding = bytes.count - body.count
        guard padding <= 2, bytes.suffix(padding).allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return body.allSatisfy { byte in
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
        }
    }

    static func isSwiftTypeName(_ text: String) -> Bool {
        guard let first = text.utf8.first, !(48...57).contains(first) else { return false }
        return text.utf8.allSatisfy { byte in
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}

extension FieldReader {
    /// Whether the object has `key` with a non-null value.
    func has(_ key: String) -> Bool {
        guard case .object(let fields) = value, let field = fields[key] else { return false }
        return field != .null
    }

    func optionalNumber(_ key: String) throws(JobValidationError) -> Double? {
        guard has(key), case .object(let fields) = value, let field = fields[key] else { return nil }
        guard case .number(let number) = field, number.isFinite else {
            throw JobValidationError(path.isEmpty ? key : "\(path).\(key)", "must be a number")
        }
        return number
    }

    func optionalBool(_ key: String) throws(JobValidationError) -> Bool? {
        guard has(key), case .object(let fields) = value, let field = fields[key] else { return nil }
        guard case .bool(let flag) = field else {
            throw JobValidationError(path.isEmpty ? key : "\(path).\(key)", "must be true or false")
        }
        return flag
    }
}
