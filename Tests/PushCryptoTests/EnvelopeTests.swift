import Foundation
import PushCrypto
import Testing

/// One RSA-2048 key pair for the whole suite: generation is the slow part of these tests.
enum TestKeys {
    static let device: DevicePrivateKey = {
        do { return try DevicePrivateKey.generate() } catch { fatalError("key generation failed: \(error)") }
    }()

    static var devicePublic: DevicePublicKey {
        get throws { try device.publicKey }
    }
}

@Suite("Envelope sealing and opening")
struct EnvelopeTests {
    @Test("round trip for plaintexts from empty to past the largest that fits a push",
          arguments: [0, 1, 15, 16, 17, 31, 32, 33, 255, 1024, 2048, 2700, 2760, 4096, 7600, 7700, 20_000])
    func roundTrip(size: Int) throws {
        let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let publicKey = try TestKeys.devicePublic
        let envelope = try EnvelopeSealer.seal(plaintext, for: publicKey)
        #expect(envelope.cipherText.count == size)
        #expect(envelope.nonce.count == 12)
        #expect(envelope.tag.count == 16)
        #expect(envelope.encryptedKey.count == 256)
        #expect(try TestKeys.device.open(envelope) == plaintext)
        #expect(try TestKeys.device.open(json: Data(envelope.json.utf8)) == plaintext)
        let json = try EnvelopeSealer.sealJSON(plaintext, for: publicKey)
        #expect(try TestKeys.device.open(json: Data(json.utf8)) == plaintext)
    }

    @Test("the JSON has exactly the four fields (plus kid when given), standard base64 with padding")
    func jsonShape() throws {
        let publicKey = try TestKeys.devicePublic
        let plain = try JSONSerialization.jsonObject(with: Data(try EnvelopeSealer.sealJSON([1, 2, 3], for: publicKey).utf8))
        let fields = try #require(plain as? [String: String])
        #expect(Set(fields.keys) == ["encrypted_key", "cipher_text", "nonce", "tag"])
        for (name, value) in fields {
            #expect(Data(base64Encoded: value) != nil, "\(name)")
            #expect(value.count % 4 == 0, "\(name) is padded")
        }
        let withKid = try JSONSerialization.jsonObject(
            with: Data(try EnvelopeSealer.sealJSON([1], for: publicKey, keyID: "k\"1\\").utf8)) as? [String: String]
        #expect(withKid?["kid"] == "k\"1\\")
        #expect(withKid?.count == 5)
    }

    @Test("the quoted form is the envelope JSON as a JSON string value, its length that of the JSON",
          arguments: [nil, "device-key-2026", "clé-ключ-2026", "k\"1\\", "k\u{1}\n\t/é"])
    func quotedJSON(keyID: String?) throws {
        let plaintext = Array("{\"title\":\"hi\"}".utf8)
        let quoted = try EnvelopeSealer.sealQuotedJSON(plaintext, for: try TestKeys.devicePublic, keyID: keyID)
        let text = try #require(try JSONSerialization.jsonObject(with: Data(quoted.bytes), options: .fragmentsAllowed) as? String)
        #expect(text.utf8.count == quoted.textLength)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String])
        #expect(Set(fields.keys) == Set(["encrypted_key", "cipher_text", "nonce", "tag"] + (keyID == nil ? [] : ["kid"])))
        #expect(fields["kid"] == keyID)
        #expect(try TestKeys.device.open(json: Data(text.utf8)) == plaintext)
        // Field for field what `sealJSON` writes, only quoted.
        let plain = try EnvelopeSealer.sealJSON(plaintext, for: try TestKeys.devicePublic, keyID: keyID)
        #expect(plain.utf8.count == text.utf8.count)
        #expect(plain.replacingOccurrences(of: "\"[A-Za-z0-9+/=]{8,}\"", with: "B", options: .regularExpression)
            == text.replacingOccurrences(of: "\"[A-Za-z0-9+/=]{8,}\"", with: "B", options: .regularExpression))
    }

    @Test("JSONString.quote writes a JSON string that reads back as the text, escaping only what it must",
          arguments: ["", "plain-key id/2026", "é ü 漢字 😀", "\u{2028}", "\"", "\\", "a\u{0}b", "\u{1f}", "\n\r\t", " \u{7f}"])
    func quoteReadsBack(text: String) throws {
        let quoted = JSONString.quote(text)
        #expect(try JSONDecoder().decode(String.self, from: Data(quoted.utf8)) == text)
        let needsEscape = text.utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        #expect(JSONString.needsNoEscape(text) == !needsEscape)
        if !needsEscape { #expect(quoted == "\"" + text + "\"") }
    }

    @Test("every envelope has a fresh key and nonce")
    func freshness() throws {
        let publicKey = try TestKeys.devicePublic
        let plaintext = Array("same plaintext".utf8)
        let envelopes = try (0..<50).map { _ in try EnvelopeSealer.seal(plaintext, for: publicKey) }
        #expect(Set(envelopes.map(\.nonce)).count == envelopes.count)
        #expect(Set(envelopes.map(\.encryptedKey)).count == envelopes.count)
        #expect(Set(envelopes.map(\.cipherText)).count == envelopes.count)
    }

    @Test("changing any byte of any field is detected")
    func everyByteTamperingDetected() throws {
        let plaintext = Array(#"{"title":"secret"}"#.utf8)
        let original = try EnvelopeSealer.seal(plaintext, for: try TestKeys.devicePublic)
        let fields: [WritableKeyPath<Envelope, [UInt8]>] = [\.encryptedKey, \.cipherText, \.nonce, \.tag]
        var checked = 0
        for field in fields {
            for index in original[keyPath: field].indices {
                var tampered = original
                tampered[keyPath: field][index] ^= 0x01
                #expect(throws: EnvelopeOpenError.self) { try TestKeys.device.open(tampered) }
                checked += 1
            }
        }
        #expect(checked == 256 + plaintext.count + 12 + 16)
    }

    @Test("changing any character of the JSON text is detected or refused")
    func everyCharacterTamperingDetected() throws {
        let json = Array(try EnvelopeSealer.sealJSON(Array("hello".utf8), for: try TestKeys.devicePublic).utf8)
        for index in json.indices {
            var tampered = json
            // Swap for another base64 character (or break the JSON shape where it is syntax).
            tampered[index] = tampered[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            #expect(throws: EnvelopeOpenError.self, "index \(index)") { try TestKeys.device.open(json: tampered) }
        }
    }

    @Test("malformed envelopes are refused as malformed, never opened",
          arguments: [
            "", "[]", "42", "\"not an object\"", "{}", #"{"encrypted_key":1,"cipher_text":"","nonce":"","tag":""}"#,
            #"{"encrypted_key":"AA==","cipher_text":"AA==","nonce":"AAAAAAAAAAAAAAAA","tag":"AA=="}"#,
            #"{"encrypted_key":"AA==","cipher_text":"AA","nonce":"AAAAAAAAAAAAAAAA","tag":"AAAAAAAAAAAAAAAAAAAAAA=="}"#,
          ])
    func malformed(json: String) throws {
        let error = #expect(throws: EnvelopeOpenError.self) { try TestKeys.device.open(json: Data(json.utf8)) }
        guard case .malformedEnvelope = error else {
            Issue.record("expected malformedEnvelope, got \(String(describing: error))")
            return
        }
    }

    @Test("an envelope sealed for one key does not open with another")
    func wrongKey() throws {
        let other = try DevicePrivateKey.generate()
        let envelope = try EnvelopeSealer.seal([1, 2, 3], for: try other.publicKey)
        #expect(throws: EnvelopeOpenError.wrongKey) { try TestKeys.device.open(envelope) }
    }

    @Test("sealing is safe from many tasks at once with one shared key")
    func concurrentSealing() async throws {
        let publicKey = try TestKeys.devicePublic
        let results = try await withThrowingTaskGroup(of: (Int, Envelope).self) { group in
            for index in 0..<200 {
                group.addTask { (index, try EnvelopeSealer.seal(Array("message \(index)".utf8), for: publicKey)) }
            }
            return try await group.reduce(into: [(Int, Envelope)]()) { $0.append($1) }
        }
        #expect(results.count == 200)
        for (index, envelope) in results {
            #expect(try TestKeys.device.open(envelope) == Array("message \(index)".utf8))
        }
    }
}
