import Foundation
import PushCrypto
import Testing

@Suite("Public key parsing and caching")
struct PublicKeyTests {
    @Test("line-wrapped, URL-safe and unpadded base64 keys are accepted, as Android's Base64 flags produce")
    func lenientBase64() throws {
        let publicKey = try TestKeys.devicePublic
        let spki = publicKey.subjectPublicKeyInfoBase64
        let wrapped = stride(from: 0, to: spki.count, by: 76).map { offset in
            String(spki.dropFirst(offset).prefix(76))
        }.joined(separator: "\n") + "\n"
        let urlSafe = spki.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        for text in [wrapped, urlSafe, "  \(spki)  "] {
            #expect(try DevicePublicKey(parsing: text).subjectPublicKeyInfoBase64 == spki)
        }
    }

    @Test("trailing bytes after a valid key are refused")
    func trailingGarbage() throws {
        var der = try #require(Data(base64Encoded: try TestKeys.devicePublic.subjectPublicKeyInfoBase64))
        der.append(contentsOf: [0, 0, 0])
        #expect(throws: PublicKeyError.self) { try DevicePublicKey(parsing: der.base64EncodedString()) }
    }

    @Test("unparseable inputs give a clear unparseable error",
          arguments: ["", "   ", "not base64 at all!", "AAAA", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
                      "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"])
    func unparseable(text: String) {
        let error = #expect(throws: PublicKeyError.self) { try DevicePublicKey(parsing: text) }
        guard case .unparseable = error else {
            Issue.record("expected unparseable, got \(String(describing: error))")
            return
        }
        #expect(error?.description.contains("public key") == true)
    }

    @Test("the cache parses a key once and remembers refusals")
    func cacheReuse() throws {
        let cache = PublicKeyCache(capacity: 4)
        let text = try TestKeys.devicePublic.pem
        let first = try cache.key(for: text)
        let second = try cache.key(for: text)
        #expect(first === second)
        #expect(throws: PublicKeyError.self) { try cache.key(for: "garbage") }
        #expect(throws: PublicKeyError.self) { try cache.key(for: "garbage") }
        #expect(cache.count == 2)
    }

    @Test("keys looked up by id: a hit needs the same text, so one id never hands out another text's key")
    func cacheByID() throws {
        let cache = PublicKeyCache(capacity: 4)
        let mine = try TestKeys.devicePublic
        let other = try DevicePrivateKey.generate().publicKey
        let first = try cache.key(for: mine.pem, id: "kid-1")
        #expect(try cache.key(for: mine.pem, id: "kid-1") === first)
        // The same id with another key's text (a hand-made row, a collision): that text's key.
        let second = try cache.key(for: other.subjectPublicKeyInfoBase64, id: "kid-1")
        #expect(second !== first)
        #expect(second.subjectPublicKeyInfoBase64 == other.subjectPublicKeyInfoBase64)
        #expect(try cache.key(for: mine.pem, id: "kid-1").subjectPublicKeyInfoBase64 == mine.subjectPublicKeyInfoBase64)
        #expect(throws: PublicKeyError.self) { try cache.key(for: "garbage", id: "kid-1") }
        #expect(cache.count == 1, "one entry per id")
    }

    @Test("the cache stays within its capacity")
    func cacheBounded() throws {
        let cache = PublicKeyCache(capacity: 8)
        for index in 0..<40 {
            _ = try? cache.key(for: "not a key \(index)")
        }
        #expect(cache.count <= 8)
    }
}

@Suite("Base64")
struct Base64Tests {
    @Test("encoding matches Foundation's for every length up to 300 bytes")
    func matchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString(), "length \(length)")
        }
    }

    @Test("strict decoding refuses missing padding, whitespace and foreign alphabets",
          arguments: ["AA", "AA=", "A A=", "AA-_", "AA==\n", "****"])
    func strictRefuses(text: String) {
        #expect(Base64.decodeStrict(text) == nil)
    }
}
