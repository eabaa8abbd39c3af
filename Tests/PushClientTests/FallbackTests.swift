import Foundation
import PushClient
import PushCrypto
import PushModel
import Testing

/// When the phone cannot decrypt, it shows the payload's fallback text and says why.
@Suite("Fallbacks")
struct FallbackTests {
    static func job() throws -> NotificationJob { try Payloads.variedJobs()[1] }

    static func expectFallback(_ reading: AlertReading?, _ reason: FallbackReason, platform: DisplayedNotification.Platform = .ios) throws {
        let reading = try #require(reading)
        #expect(reading.fallbackReason == reason)
        #expect(reading.display == Payloads.expectedFallback(try job(), platform: platform))
        #expect(!"\(reading.display)".contains("Ada") && !"\(reading.display)".contains("room 4"))
    }

    @Test("a locked key store (before first unlock) gives the fallback, reason locked")
    func locked() async throws {
        var store = Payloads.store(0)
        store.isLocked = true
        try Self.expectFallback(await Payloads.read(try Payloads.apns(Self.job(), sealedFor: Payloads.key(0)), store: store).alert, .locked)
        try Self.expectFallback(await Payloads.read(try Payloads.fcm(Self.job(), sealedFor: Payloads.key(0)), store: store).alert,
                                .locked, platform: .android)
    }

    @Test("an empty key store gives the fallback, reason no key")
    func noKey() async throws {
        try Self.expectFallback(await Payloads.read(try Payloads.apns(Self.job(), sealedFor: Payloads.key(0)), store: InMemoryKeyStore()).alert, .noKey)
    }

    @Test("a payload sealed for another key gives the fallback, reason wrong key")
    func wrongKey() async throws {
        try Self.expectFallback(await Payloads.read(try Payloads.apns(Self.job(), sealedFor: Payloads.key(1)), store: Payloads.store(0)).alert, .wrongKey)
        try Self.expectFallback(await Payloads.read(try Payloads.fcm(Self.job(), sealedFor: Payloads.key(2)), store: Payloads.store(0)).alert,
                                .wrongKey, platform: .android)
    }

    @Test("tampering with any envelope part gives the fallback with its reason", arguments: [
        ("cipher_text", FallbackReason.authenticationFailed), ("tag", .authenticationFailed),
        ("nonce", .authenticationFailed), ("encrypted_key", .wrongKey),
    ])
    func tampered(field: String, reason: FallbackReason) async throws {
        let envelope = try #require(PayloadValue(json: Array(try Payloads.sealed(Self.job(), for: Payloads.key(0)).utf8))?.objectValue)
        let text = try #require(envelope[field]?.stringValue)
        var bytes = [UInt8](try #require(Data(base64Encoded: text)))
        bytes[bytes.count / 2] ^= 0x01
        var altered = envelope
        altered[field] = .string(Data(bytes).base64EncodedString())
        var root = try #require(PayloadValue(json: try Payloads.apns(Self.job(), sealedFor: nil))?.objectValue)
        root["encrypted_data"] = .string(PayloadValue.object(altered).jsonText)
        var aps = try #require(root["aps"]?.objectValue)
        aps["mutable-content"] = .number(1)
        root["aps"] = .object(aps)
        try Self.expectFallback(NotificationReader(keyStore: Payloads.store(0)).readAPNs(.object(root)), reason)
    }

    @Test("kid picks the key, so a rotated device still reads pushes sealed for its previous key")
    func rotation() throws {
        let job = try Self.job()
        let store = InMemoryKeyStore(keys: ["old": OpenSSLPrivateKey(Payloads.key(0)), "new": OpenSSLPrivateKey(Payloads.key(1))],
                                     currentKeyID: "new")
        let reader = NotificationReader(keyStore: store)
        for (key, kid) in [(Payloads.key(0), "old"), (Payloads.key(1), "new")] {
            let payload = try #require(PayloadValue(json: try Payloads.apns(job, sealedFor: key, keyID: kid)))
            #expect(reader.readAPNs(payload).fallbackReason == nil, "kid \(kid)")
        }
        // Without kid, or with one the phone does not know, the current key is used.
        let noKid = try #require(PayloadValue(json: try Payloads.apns(job, sealedFor: Payloads.key(1))))
        #expect(reader.readAPNs(noKid).fallbackReason == nil)
        let unknown = try #require(PayloadValue(json: try Payloads.apns(job, sealedFor: Payloads.key(1), keyID: "gone")))
        #expect(reader.readAPNs(unknown).fallbackReason == nil)
        let oldWithoutKid = try #require(PayloadValue(json: try Payloads.apns(job, sealedFor: Payloads.key(0))))
        #expect(reader.readAPNs(oldWithoutKid).fallbackReason == .wrongKey)
    }

    @Test("authenticated plaintext of the wrong shape is refused whole, never shown in part")
    func malformedContent() throws {
        let reader = NotificationReader(keyStore: Payloads.store(0))
        for plaintext in [#"[1,2]"#, #"{"title":"Secret"}"#, #"{"title":"Secret","message":7}"#,
                          #"{"title":"Secret","message":"m","body":"x"}"#, "not json"] {
            let envelope = try EnvelopeSealer.sealJSON(Array(plaintext.utf8), for: try Payloads.key(0).publicKey)
            let payload: PayloadValue = .object([
                "aps": .object(["alert": .object(["title": .string("Fallback"), "body": .string("text")]), "mutable-content": .number(1)]),
                "encrypted_data": .string(envelope),
            ])
            let reading = reader.readAPNs(payload)
            guard case .malformedContent? = reading.fallbackReason else {
                Issue.record("\(plaintext): \(String(describing: reading.fallbackReason))")
                continue
            }
            #expect(reading.display.title == "Fallback" && reading.display.body == "text")
        }
    }

    @Test("encrypted_data without mutable-content: the extension would not run")
    func extensionWouldNotRun() throws {
        var root = try #require(PayloadValue(json: try Payloads.apns(Self.job(), sealedFor: Payloads.key(0)))?.objectValue)
        var aps = try #require(root["aps"]?.objectValue)
        aps["mutable-content"] = nil
        root["aps"] = .object(aps)
        let reading = NotificationReader(keyStore: Payloads.store(0)).readAPNs(.object(root))
        guard case .malformedPayload? = reading.fallbackReason else {
            Issue.record("\(String(describing: reading.fallbackReason))")
            return
        }
    }
}
