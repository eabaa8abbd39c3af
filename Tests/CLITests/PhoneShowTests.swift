import Foundation
import PushCrypto
import PushTestSupport
import Testing

/// `pushd phone show` on Live Activity payloads, no servers: an offline twin, payloads
/// sealed for its key as the Live Activity contract lays them out (`props` a JSON string,
/// `encrypted_data` the envelope object inside it).
@Suite("pushd phone show: Live Activities")
final class PhoneShowTests: Sendable {
    let directory: URL
    let environment: [String: String]

    init() throws {
        directory = try BuildProducts.temporaryDirectory("phone")
        environment = ["PUSHD_STATE_DIR": directory.appendingPathComponent("state").path]
    }

    /// The twin's state holds (test) private keys: nothing is left behind.
    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    func phone(_ arguments: [String]) throws -> String {
        let result = try ChildProcess.run(BuildProducts.pushd, ["phone"] + arguments, environment: environment)
        #expect(result.status == 0, "pushd phone \(arguments.first ?? ""): \(result.errorText)")
        return result.outputText
    }

    func payload(_ name: String, event: String, props: String) throws -> String {
        let text = #"{"aps":{"timestamp":1764547200,"event":""# + event + #"","content-state":{"name":"InterviewActivity","props":"#
            + props + "}}}"
        let file = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    /// A JSON string literal of `text`.
    func quoted(_ text: String) -> String { JSONString.quote(text) }

    @Test("start enriches and stages, a later update without PII shows it, locked and malformed fall back")
    func liveActivity() throws {
        _ = try phone(["init", "--name", "la", "--format", "ios", "--recipient", "r", "--app", "com.example.app",
                       "--token", "c0de", "--offline"])
        let keys = directory.appendingPathComponent("state/phone/la/keys")
        let publicFile = try #require(try FileManager.default.contentsOfDirectory(atPath: keys.path).first { $0.hasSuffix(".pub") })
        let keyID = String(publicFile.dropLast(4))
        let publicKey = try DevicePublicKey(parsing: try String(contentsOf: keys.appendingPathComponent(publicFile), encoding: .utf8))
        let pii = #"{"candidateName":"Ada Lovelace","avatarUrl":"https://example.com/ada.png"}"#
        let envelope = try EnvelopeSealer.sealJSON(Array(pii.utf8), for: publicKey, keyID: keyID)
        let clear = #"{"meetingEventId":"meeting-1","status":"upcoming","encrypted_data":"# + envelope + "}"
        let start = try payload("start.json", event: "start", props: quoted(clear))

        let locked = try phone(["show", "--name", "la", "--file", start, "--locked"])
        #expect(locked.contains("FALLBACK (locked)") && !locked.contains("Ada") && locked.contains("upcoming"), "\(locked)")

        let shown = try phone(["show", "--name", "la", "--file", start])
        #expect(shown.contains("live activity start InterviewActivity") && shown.contains("decrypted and staged"), "\(shown)")
        #expect(shown.contains("Ada Lovelace") && shown.contains("la-avatar-meeting-1") && !shown.contains("encrypted_data"))

        let update = try payload("update.json", event: "update", props: quoted(#"{"meetingEventId":"meeting-1","status":"started"}"#))
        let updated = try phone(["show", "--name", "la", "--file", update])
        #expect(updated.contains("nothing sealed") && updated.contains("__tt_la_enrichment_meeting-1"), "\(updated)")
        #expect(updated.contains("Ada Lovelace") && updated.contains("started"))

        let malformed = try payload("object-props.json", event: "update", props: #"{"meetingEventId":"meeting-1"}"#)
        #expect(try phone(["show", "--name", "la", "--file", malformed]).contains("LIVE ACTIVITY NOT APPLIED (malformed_payload)"))
    }
}
