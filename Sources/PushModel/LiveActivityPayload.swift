/// Builds the APNs Live Activity payload of one job for each of its devices
/// (`Schemas/live-activities.md`, "What the worker sends"):
///
///     {"aps":{"timestamp":…,"event":…,"content-state":{"name":…,"props":"<props JSON as a string>"},
///             "attributes-type":…,"attributes":{…},"alert":{…},"stale-date":…,"dismissal-date":…,
///             "relevance-score":…,"input-push-token":1}}
///
/// `props` is a string because the phone decodes `ContentState` with default strategies and its
/// `props` field is a `String`. A device with a key gets the clear props followed by
/// `"encrypted_data"`, the envelope object sealing `private_props` for that device; a device
/// without a key (legacy app) gets the clear props only, the layout the widget renders without
/// private data. The clear props are written with sorted keys (the job's object has no order).
///
/// Everything but the envelope is rendered once per job. Since an envelope's length depends only
/// on the plaintext's length and the device's key, `size(sealingFor:keyID:)` gives a device's
/// exact payload size before any RSA work, so an oversized device costs no sealing.
public struct LiveActivityPayload: Sendable {
    /// The limit this payload is held to: 4096 for a device, 5120 for a broadcast.
    public let limit: Int
    /// What is sealed for each device with a key: the compact JSON of `private_props`; nil
    /// when the job has none (every device then gets the clear layout).
    public let plaintext: [UInt8]?
    /// The payload without `encrypted_data`.
    public let clearPayload: [UInt8]
    /// Up to and including the escaped clear props, without their closing brace.
    private let keyedHead: [UInt8]
    /// The escaped `,"encrypted_data":` (no comma when the clear props are empty).
    private let envelopeLead: [UInt8]
    /// The escaped closing brace of props, the string's quote, and the rest of the payload.
    private let keyedTail: [UInt8]

    public init(activity: LiveActivity) {
        limit = activity.isBroadcast ? PayloadLimits.apnsBroadcast : PayloadLimits.apns
        plaintext = activity.privateProps.map { Array(JSONValue.object($0).jsonText.utf8) }

        var head = "{\"aps\":{\"timestamp\":\(activity.timestamp),\"event\":" + JSONWriter.quoted(activity.event.rawValue)
        var tail = ""
        var clearProps = "{}"
        if let state = activity.contentState {
            head += ",\"content-state\":{\"name\":" + JSONWriter.quoted(state.name) + ",\"props\":"
            clearProps = JSONValue.object(state.props).jsonText
            tail += "}"
        }
        if let type = activity.attributesType { tail += ",\"attributes-type\":" + JSONWriter.quoted(type) }
        if let attributes = activity.attributes { tail += ",\"attributes\":" + JSONValue.object(attributes).jsonText }
        if let alert = activity.alert {
            tail += ",\"alert\":{\"title\":" + JSONWriter.quoted(alert.title) + ",\"body\":" + JSONWriter.quoted(alert.body)
            if let sound = alert.sound { tail += ",\"sound\":" + JSONWriter.quoted(sound) }
            tail += "}"
        }
        if let stale = activity.staleDate { tail += ",\"stale-date\":\(stale)" }
        if let dismissal = activity.dismissalDate { tail += ",\"dismissal-date\":\(dismissal)" }
        if let score = activity.relevanceScore { tail += ",\"relevance-score\":" + JSONValue.format(score) }
        if activity.event == .start && activity.inputPush == .token { tail += ",\"input-push-token\":1" }
        tail += "}}"

        if activity.contentState != nil {
            clearPayload = Array((head + JSONWriter.quoted(clearProps) + tail).utf8)
            // The props string split around the envelope: escaping works character by
            // character, so the escaped parts concatenate to the escaped whole.
            keyedHead = Array((head + "\"" + Self.escaped(String(clearProps.dropLast()))).utf8)
            envelopeLead = Array(Self.escaped((clearProps == "{}" ? "" : ",") + "\"encrypted_data\":").utf8)
            keyedTail = Array((Self.escaped("}") + "\"" + tail).utf8)
        } else {
            clearPayload = Array((head + tail).utf8)
            keyedHead = clearPayload
            envelopeLead = []
            keyedTail = []
        }
    }

    /// The exact size of the payload for a device whose key has `modulusBytes` (256 for
    /// RSA-2048) and id `keyID`: 506 + 4·⌈n/3⌉ bytes more than the clear payload for RSA-2048
    /// with a 16-character key id (`live-activities.md`, "Sizes").
    public func size(sealingFor modulusBytes: Int, keyID: String?) -> Int {
        guard let plaintext else { return clearPayload.count }
        func base64(_ count: Int) -> Int { 4 * ((count + 2) / 3) }
        // {"encrypted_key":"…","cipher_text":"…","nonce":"…","tag":"…"[,"kid":"…"]} with its
        // 16 quotes escaped; base64 needs no escaping ('/' is not escaped).
        var envelope = Self.escaped(#"{"encrypted_key":"","cipher_text":"","nonce":"","tag":""}"#).utf8.count
            + base64(modulusBytes) + base64(plaintext.count) + base64(12) + base64(16)
        if let keyID { envelope += Self.escaped(",\"kid\":" + JSONWriter.quoted(keyID)).utf8.count }
        return keyedHead.count + envelopeLead.count + envelope + keyedTail.count
    }

    /// The payload for one device: `encryptedData` is its envelope JSON (an object), or nil
    /// for a device without a key. Throws when it exceeds `limit`: never truncated.
    public func payload(encryptedData: String?) throws(PayloadError) -> [UInt8] {
        guard let encryptedData, plaintext != nil else { return try checked(clearPayload) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(keyedHead.count + envelopeLead.count + encryptedData.utf8.count + 40 + keyedTail.count)
        bytes.append(contentsOf: keyedHead)
        bytes.append(contentsOf: envelopeLead)
        var quoted: [UInt8] = []
        JSONStringBytes.append(encryptedData, to: &quoted)
        bytes.append(contentsOf: quoted.dropFirst().dropLast())
        bytes.append(contentsOf: keyedTail)
        return try checked(bytes)
    }

    private func checked(_ bytes: [UInt8]) throws(PayloadError) -> [UInt8] {
        guard bytes.count <= limit else { throw .tooLarge(bytes: bytes.count, limit: limit) }
        return bytes
    }

    /// `text` as the inside of a JSON string (escaped, without the quotes).
    private static func escaped(_ text: String) -> String {
        String(JSONWriter.quoted(text).dropFirst().dropLast())
    }
}

extension PayloadLimits {
    /// APNs broadcast (iOS 18): one payload for every subscriber of a channel.
    public static let apnsBroadcast = 5120
}
