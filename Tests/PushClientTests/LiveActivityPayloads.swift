import Foundation
import PushClient
import PushCrypto

/// Live Activity payloads exactly as `Schemas/live-activities.md` (branch `emul`) says the
/// worker will build them — the worker does not produce them yet, so they are built here
/// with the real sealing code: `props` a JSON string of the clear props followed by
/// `encrypted_data`, the envelope object sealed over the compact JSON of `private_props`.
enum LiveActivityPayloads {
    static let meetingID = "meeting-77123"
    static let clearProps: [(String, PayloadValue)] = [
        ("meetingEventId", .string(meetingID)), ("status", .string("upcoming")), ("startsAt", .number(1_764_548_100)),
        ("jobTitle", .string("Backend engineer")),
    ]
    static let privateProps: [String: PayloadValue] = [
        "candidateName": .string("Ada Lovelace"), "avatarUrl": .string("https://example.com/ada.png"),
        "secondAvatarUrl": .string("https://example.com/charles.png"),
    ]

    /// - Parameters:
    ///   - sealedFor: the device key; nil for a keyless device, a broadcast or a job without
    ///     private props (clear props only).
    ///   - envelopeAsString: put the envelope in `props` as a JSON string instead of an object.
    static func payload(
        event: String, clear: [(String, PayloadValue)] = clearProps, privateProps: [String: PayloadValue] = privateProps,
        sealedFor key: DevicePrivateKey?, keyID: String? = "k0", envelopeAsString: Bool = false,
        aps extra: [String: PayloadValue] = [:], contentState: Bool = true
    ) throws -> [UInt8] {
        var entries = clear.map { PayloadValue.string($0.0).jsonText + ":" + $0.1.jsonText }
        if let key {
            let plaintext = Array(PayloadValue.object(privateProps).jsonText.utf8)
            let envelope = try EnvelopeSealer.sealJSON(plaintext, for: try key.publicKey, keyID: keyID)
            entries.append("\"encrypted_data\":" + (envelopeAsString ? PayloadValue.string(envelope).jsonText : envelope))
        }
        var aps: [String: PayloadValue] = ["timestamp": .number(1_764_547_200), "event": .string(event)]
        if contentState {
            aps["content-state"] = .object(["name": .string("InterviewActivity"), "props": .string("{" + entries.joined(separator: ",") + "}")])
        }
        aps.merge(extra) { $1 }
        return Array(PayloadValue.object(["aps": .object(aps)]).jsonText.utf8)
    }

    static let startExtras: [String: PayloadValue] = [
        "attributes-type": .string("LiveActivityAttributes"), "attributes": .object(["name": .string("InterviewActivity")]),
        "alert": .object(["title": .string("Interview in 15 minutes"), "body": .string("Open to see who you are meeting"),
                          "sound": .string("default")]),
        "stale-date": .number(1_764_551_700), "relevance-score": .number(50), "input-push-token": .number(1),
    ]

    static var clearDictionary: [String: PayloadValue] { Dictionary(uniqueKeysWithValues: clearProps) }
}

/// Downloads nothing: answers with the file URL in the shared directory, or fails.
struct FakeAvatarDownloader: AvatarDownloader {
    var fails = false
    let requests = Requests()

    actor Requests {
        var made: [(remote: String, file: String)] = []
        func add(_ remote: String, _ file: String) { made.append((remote, file)) }
    }

    func download(_ remoteURL: String, toFileNamed fileName: String) async throws(AvatarDownloadError) -> String {
        await requests.add(remoteURL, fileName)
        if fails { throw AvatarDownloadError("offline") }
        return "file:///AppGroup/ExpoWidgets/" + fileName
    }
}
