import Foundation
import PushClient
import PushCrypto
import Testing

/// 10,000 payloads mutated from real ones (fields removed, retyped, truncated, base64
/// broken): none crashes the reader, every one falls back, none shows private content.
@Suite("Mutated payloads")
struct MutationTests {
    /// SplitMix64: a fixed seed gives the same 10,000 payloads on every run.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    enum Kind: CaseIterable {
        case apns, fcmBody, fcmData, liveActivity
    }

    enum Mutation: String, CaseIterable {
        case removeEnvelopeField, retypeEnvelopeField, truncateEnvelopeField, breakBase64, alterBase64
        case removeSealed, retypeSealed, truncateSealed, truncatePayload, breakStructure
    }

    static let envelopeFields = ["encrypted_key", "cipher_text", "nonce", "tag"]
    static let secret = "Ada"

    static func base(_ kind: Kind) throws -> PayloadValue {
        let job = try Payloads.variedJobs()[1]
        let bytes: [UInt8]
        switch kind {
        case .apns: bytes = try Payloads.apns(job, sealedFor: Payloads.key(0), keyID: "k0")
        case .fcmBody: bytes = try Payloads.fcm(job, sealedFor: Payloads.key(0), keyID: "k0")
        case .fcmData:
            let body = try #require(PayloadValue(json: try Payloads.fcm(job, sealedFor: Payloads.key(0))))
            bytes = Array(try #require(body["message"]?["data"]).jsonText.utf8)
        case .liveActivity:
            bytes = try LiveActivityPayloads.payload(event: "start", sealedFor: Payloads.key(0), aps: LiveActivityPayloads.startExtras)
        }
        return try #require(PayloadValue(json: bytes))
    }

    // MARK: - Where the sealed value sits in each kind

    static func sealed(in root: PayloadValue, _ kind: Kind) -> PayloadValue? {
        switch kind {
        case .apns, .fcmData: return root["encrypted_data"]
        case .fcmBody: return root["message"]?["data"]?["encrypted_data"]
        case .liveActivity:
            return root["aps"]?["content-state"]?["props"]?.objectOrEmbeddedObject?["encrypted_data"]
        }
    }

    static func replacingSealed(in root: PayloadValue, _ kind: Kind, with value: PayloadValue) -> PayloadValue {
        switch kind {
        case .apns, .fcmData: return set(root, ["encrypted_data"], value)
        case .fcmBody: return set(root, ["message", "data", "encrypted_data"], value)
        case .liveActivity:
            var props = root["aps"]?["content-state"]?["props"]?.objectOrEmbeddedObject ?? [:]
            props["encrypted_data"] = value
            return set(root, ["aps", "content-state", "props"], .string(PayloadValue.object(props).jsonText))
        }
    }

    static func set(_ value: PayloadValue, _ path: [String], _ newValue: PayloadValue?) -> PayloadValue {
        guard let key = path.first, var fields = value.objectValue else { return value }
        if path.count == 1 {
            fields[key] = newValue
        } else {
            fields[key] = set(fields[key] ?? .object([:]), Array(path.dropFirst()), newValue)
        }
        return .object(fields)
    }

    static func removing(_ root: PayloadValue, _ kind: Kind) -> [UInt8] {
        switch kind {
        case .apns, .fcmData: return Array(set(root, ["encrypted_data"], nil).jsonText.utf8)
        case .fcmBody: return Array(set(root, ["message", "data", "encrypted_data"], nil).jsonText.utf8)
        case .liveActivity: return Array(set(root, ["aps", "content-state", "props"], nil).jsonText.utf8)
        }
    }

    // MARK: - Mutations

    static let strangeValues: [PayloadValue] = [
        .null, .bool(true), .number(0), .number(-1.5e300), .array([]), .array([.string("x")]), .object([:]), .string(""),
        .string("not base64 at all"), .string("{\"encrypted_key\":1}"),
    ]

    static func mutate(_ root: PayloadValue, _ kind: Kind, _ mutation: Mutation, _ random: inout SeededGenerator) -> [UInt8] {
        let sealedValue = sealed(in: root, kind) ?? .null
        var envelope = sealedValue.objectOrEmbeddedObject ?? [:]
        /// Keeps the sealed value's form: an object stays an object, a string a string.
        func withEnvelope(_ fields: [String: PayloadValue]) -> [UInt8] {
            let replacement: PayloadValue = sealedValue.stringValue != nil ? .string(PayloadValue.object(fields).jsonText) : .object(fields)
            return Array(replacingSealed(in: root, kind, with: replacement).jsonText.utf8)
        }
        let field = envelopeFields.randomElement(using: &random) ?? "tag"
        let text = envelope[field]?.stringValue ?? ""
        switch mutation {
        case .removeEnvelopeField:
            envelope[field] = nil
            return withEnvelope(envelope)
        case .retypeEnvelopeField:
            envelope[field] = strangeValues.filter { $0.stringValue == nil || $0 == .string("") }.randomElement(using: &random)
            return withEnvelope(envelope)
        case .truncateEnvelopeField:
            let keep = Int.random(in: 0..<max(1, text.count), using: &random)
            envelope[field] = .string(Bool.random(using: &random) ? String(text.prefix(keep)) : String(text.suffix(keep)))
            return withEnvelope(envelope)
        case .breakBase64:
            var characters = Array(text)
            let position = Int.random(in: 0...characters.count, using: &random)
            if Bool.random(using: &random), !characters.isEmpty {
                characters.remove(at: min(position, characters.count - 1))  // length no longer a multiple of 4
            } else {
                characters.insert(["*", "-", "_", " ", "\n", ".", "é", "="].randomElement(using: &random) ?? "*", at: position)
            }
            envelope[field] = .string(String(characters))
            return withEnvelope(envelope)
        case .alterBase64:
            // Another valid character outside the last quartet: different bytes, still base64.
            var characters = Array(text)
            guard characters.count > 4 else { return withEnvelope(envelope) }
            let position = Int.random(in: 0..<(characters.count - 4), using: &random)
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/").filter { $0 != characters[position] }
            characters[position] = alphabet.randomElement(using: &random) ?? "A"
            envelope[field] = .string(String(characters))
            return withEnvelope(envelope)
        case .removeSealed:
            // Alerts then show the fallback (legacy). A Live Activity without it would be the
            // keyless layout, not a fallback: there, remove the whole props instead.
            return removing(root, kind)
        case .retypeSealed:
            return Array(replacingSealed(in: root, kind, with: strangeValues.randomElement(using: &random) ?? .null).jsonText.utf8)
        case .truncateSealed:
            let whole = sealedValue.stringValue ?? sealedValue.jsonText
            let cut = String(whole.prefix(Int.random(in: 0..<max(1, whole.count), using: &random)))
            return Array(replacingSealed(in: root, kind, with: .string(cut)).jsonText.utf8)
        case .truncatePayload:
            let bytes = Array(root.jsonText.utf8)
            return Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
        case .breakStructure:
            let strange = strangeValues.filter { $0.objectValue == nil && $0.stringValue == nil }.randomElement(using: &random) ?? .null
            let path: [String]
            switch kind {
            case .apns: path = Bool.random(using: &random) ? ["aps"] : ["aps", "mutable-content"]
            case .fcmBody: path = ["message", "data"]
            // A data map without `title` still decrypts: retype a value (FCM allows only strings).
            case .fcmData: return Array(set(root, [["title", "message", "channelId"].randomElement(using: &random) ?? "title"], strange).jsonText.utf8)
            case .liveActivity:
                path = [["aps", "content-state"], ["aps", "content-state", "props"], ["aps", "event"], ["aps"]]
                    .randomElement(using: &random) ?? ["aps"]
            }
            // Remove it, or give it a type the phone cannot use.
            return Array(set(root, path, Bool.random(using: &random) ? nil : strange).jsonText.utf8)
        }
    }

    /// Everything the phone would show or hand to the app.
    static func shown(_ reading: PushReading) -> String {
        switch reading {
        case .alert(let alert):
            let display = alert.display
            return [display.title, display.body, display.subtitle ?? "", PayloadValue.object(display.data).jsonText,
                    display.sender?.displayName ?? ""].joined(separator: "\n")
        case .liveActivity(let activity):
            return PayloadValue.object(activity.view.props).jsonText
        }
    }

    @Test("10,000 mutated payloads: no crash, all fall back, no private content shown")
    func tenThousand() async throws {
        var bases: [Kind: PayloadValue] = [:]
        for kind in Kind.allCases { bases[kind] = try Self.base(kind) }
        let store = Payloads.store(0, keyID: "k0")
        // Each base opens unmutated, so the mutations are what makes them fall back.
        for (kind, base) in bases {
            let reading = await Payloads.read(Array(base.jsonText.utf8), store: store)
            #expect(reading.fallbackReason == nil, "\(kind) base: \(String(describing: reading.fallbackReason))")
            #expect(Self.shown(reading).contains(Self.secret), "\(kind) base shows its private content")
        }
        var random = SeededGenerator(state: 20_261_130)
        var counts: [Mutation: Int] = [:]
        var reasons: [String: Int] = [:]
        var failures = 0
        for index in 0..<10_000 {
            let kind = Kind.allCases[index % Kind.allCases.count]
            let mutation = Mutation.allCases.randomElement(using: &random) ?? .truncatePayload
            let bytes = Self.mutate(try #require(bases[kind]), kind, mutation, &random)
            let enricher = LiveActivityEnricher(keyStore: store, staging: InMemoryEnrichmentStaging(), downloader: FakeAvatarDownloader())
            let reading = await enricher.readAny(json: bytes, platform: kind == .apns || kind == .liveActivity ? .ios : .android)
            counts[mutation, default: 0] += 1
            guard let reason = reading.fallbackReason, !Self.shown(reading).contains(Self.secret) else {
                failures += 1
                if failures <= 5 {
                    Issue.record("#\(index) \(kind) \(mutation) did not fall back: \(String(decoding: bytes.prefix(600), as: UTF8.self))")
                }
                continue
            }
            reasons[reason.code, default: 0] += 1
        }
        #expect(failures == 0)
        #expect(Set(counts.keys) == Set(Mutation.allCases))
        // The mutations reach every stage of the reader, the ciphers included.
        for code in ["malformed_payload", "malformed_envelope", "wrong_key", "authentication_failed", "legacy"] {
            #expect(reasons[code, default: 0] > 0, "no mutation ended as \(code): \(reasons)")
        }
    }
}
