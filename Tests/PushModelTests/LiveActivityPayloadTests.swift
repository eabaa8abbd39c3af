import Foundation
import PushCrypto
import PushModel
import Testing

@Suite("Live Activity payload")
struct LiveActivityPayloadTests {
    static let examples = LiveActivityDecodingTests.examples

    static func activity(_ name: String) throws -> LiveActivity {
        try #require(try LiveActivityDecodingTests.example(name).liveActivity)
    }

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test("a keyless device gets exactly the clear layout of the contract, keys in order")
    func clearStart() throws {
        let payload = LiveActivityPayload(activity: try Self.activity("liveactivity.start.json"))
        let text = String(decoding: try payload.payload(encryptedData: nil), as: UTF8.self)
        // The contract's example, with the clear props' keys sorted.
        let expected = #"{"aps":{"timestamp":1764547200,"event":"start","content-state":{"name":"InterviewActivity","props":"{\"jobTitle\":\"Backend engineer\",\"meetingEventId\":\"meeting-77123\",\"startsAt\":1764548100,\"status\":\"upcoming\"}"},"attributes-type":"LiveActivityAttributes","attributes":{"name":"InterviewActivity"},"alert":{"title":"Interview in 15 minutes","body":"Open to see who you are meeting","sound":"default"},"stale-date":1764551700,"relevance-score":50,"input-push-token":1}}"#
        #expect(text == expected)
        #expect(payload.limit == 4096)
        #expect(payload.plaintext.map { String(decoding: $0, as: UTF8.self) }
            == #"{"avatarUrl":"https://cdn.example.com/avatars/ada.png","candidateName":"Ada Lovelace"}"#)
    }

    @Test("a keyed device's props carry the envelope object, which opens to exactly the private props")
    func keyedUpdate() throws {
        let activity = try Self.activity("liveactivity.update.json")
        let payload = LiveActivityPayload(activity: activity)
        let key = try DevicePrivateKey.generate()
        let plaintext = try #require(payload.plaintext)
        let envelope = try EnvelopeSealer.sealJSON(plaintext, for: key.publicKey, keyID: "0123456789abcdef")
        let bytes = try payload.payload(encryptedData: envelope)
        #expect(bytes.count == payload.size(sealingFor: 256, keyID: "0123456789abcdef"), "the size is known before sealing")
        let aps = try #require(try Self.object(bytes)["aps"] as? [String: Any])
        #expect(aps["timestamp"] as? Int == 1_764_548_160 && aps["event"] as? String == "update")
        #expect(aps["stale-date"] as? Int == 1_764_551_760 && aps["relevance-score"] as? Int == 80)
        #expect(aps["attributes-type"] == nil && aps["input-push-token"] == nil && aps["alert"] == nil)
        let state = try #require(aps["content-state"] as? [String: Any])
        #expect(state["name"] as? String == "InterviewActivity")
        let props = try Self.object(Array(try #require(state["props"] as? String).utf8))
        #expect(props["meetingEventId"] as? String == "meeting-77123" && props["status"] as? String == "in-progress")
        #expect(props["candidateName"] == nil, "private fields never in the clear")
        let sealed = try #require(props["encrypted_data"] as? [String: Any])
        #expect(sealed["kid"] as? String == "0123456789abcdef")
        let opened = try key.open(json: JSONSerialization.data(withJSONObject: sealed))
        let fields = try Self.object(opened)
        #expect(fields as NSDictionary == [
            "candidateName": "Ada Lovelace", "avatarUrl": "https://cdn.example.com/avatars/ada.png",
            "secondAvatarUrl": "https://cdn.example.com/avatars/charles.png",
        ] as NSDictionary)
    }

    @Test("the contract's size formula: 506 + 4·⌈n/3⌉ over the clear payload with a kid, 477 without, one less for empty props")
    func sizes() throws {
        let activity = try Self.activity("liveactivity.update.json")
        let payload = LiveActivityPayload(activity: activity)
        let n = try #require(payload.plaintext).count
        let growth = 4 * ((n + 2) / 3)
        #expect(payload.size(sealingFor: 256, keyID: "0123456789abcdef") == payload.clearPayload.count + 506 + growth)
        #expect(payload.size(sealingFor: 256, keyID: nil) == payload.clearPayload.count + 477 + growth)
        var empty = activity
        empty.contentState?.props = [:]
        let emptyPayload = LiveActivityPayload(activity: empty)
        #expect(emptyPayload.size(sealingFor: 256, keyID: nil) == emptyPayload.clearPayload.count + 476 + growth)
        // And it holds for real envelopes without a kid and with empty props.
        let key = try DevicePrivateKey.generate()
        let envelope = try EnvelopeSealer.sealJSON(try #require(emptyPayload.plaintext), for: key.publicKey)
        #expect(try emptyPayload.payload(encryptedData: envelope).count == emptyPayload.size(sealingFor: 256, keyID: nil))
    }

    @Test("end: dismissal date and final state, no alert; a broadcast is held to 5120 bytes")
    func endAndBroadcast() throws {
        let end = LiveActivityPayload(activity: try Self.activity("liveactivity.end.json"))
        let aps = try #require(try Self.object(end.clearPayload)["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "end" && aps["dismissal-date"] as? Int == 1_764_552_300)
        #expect(aps["alert"] == nil && aps["stale-date"] == nil && aps["content-state"] != nil)
        var broadcast = try Self.activity("liveactivity.broadcast.json")
        let payload = LiveActivityPayload(activity: broadcast)
        #expect(payload.limit == 5120 && payload.plaintext == nil)
        broadcast.contentState?.props["filler"] = .string(String(repeating: "x", count: 4500))
        #expect(try LiveActivityPayload(activity: broadcast).payload(encryptedData: nil).count > 4096)
        broadcast.contentState?.props["filler"] = .string(String(repeating: "x", count: 5200))
        #expect(throws: PayloadError.self) { try LiveActivityPayload(activity: broadcast).payload(encryptedData: nil) }
    }

    @Test("a payload over 4096 bytes is refused, never truncated; input_push none omits input-push-token")
    func limits() throws {
        var activity = try Self.activity("liveactivity.start.json")
        activity.inputPush = .none
        let text = String(decoding: LiveActivityPayload(activity: activity).clearPayload, as: UTF8.self)
        #expect(!text.contains("input-push-token"))
        activity.privateProps = ["note": .string(String(repeating: "y", count: 3000))]
        let payload = LiveActivityPayload(activity: activity)
        #expect(payload.size(sealingFor: 256, keyID: "0123456789abcdef") > 4096)
        #expect(try payload.payload(encryptedData: nil).count < 4096, "the keyless layout still fits")
    }
}
