import Foundation
import PushCrypto
import Testing

/// Finding a cached key's text by the SHA-256 of the text, for lookups that send digests.
@Suite("Public key cache by digest")
struct PublicKeyCacheDigestTests {
    private static func text(forDigestOf text: String, in cache: PublicKeyCache) -> String? {
        DevicePublicKey.checkDigest(ofKeyText: text).withUnsafeBytes { cache.text(forDigest: $0) }
    }

    @Test("a cached text is found by its digest, refused ones too; an unknown or malformed digest finds nothing")
    func found() throws {
        let cache = PublicKeyCache(capacity: 4)
        let key = try TestKeys.devicePublic.pem
        #expect(Self.text(forDigestOf: key, in: cache) == nil)
        _ = try cache.key(for: key, id: "kid-1")
        #expect(Self.text(forDigestOf: key, in: cache) == key)
        // A refused text is cached as its error, and found: the lookup need not fetch it again.
        _ = try? cache.key(for: "garbage", id: "kid-2")
        #expect(Self.text(forDigestOf: "garbage", in: cache) == "garbage")
        #expect(Self.text(forDigestOf: key + "\n", in: cache) == nil)
        #expect([UInt8](repeating: 1, count: 31).withUnsafeBytes { cache.text(forDigest: $0) } == nil)
        #expect([UInt8](repeating: 1, count: 32).withUnsafeBytes { cache.text(forDigest: $0) } == nil)
    }

    @Test("another text under the same id replaces the entry: the old text's digest finds nothing any more")
    func replacedUnderOneID() throws {
        let cache = PublicKeyCache(capacity: 4)
        let first = try TestKeys.devicePublic.pem
        let second = try DevicePrivateKey.generate().publicKey.subjectPublicKeyInfoBase64
        _ = try cache.key(for: first, id: "kid-1")
        _ = try cache.key(for: second, id: "kid-1")
        #expect(Self.text(forDigestOf: first, in: cache) == nil)
        #expect(Self.text(forDigestOf: second, in: cache) == second)
        // And back: the first text is the entry again.
        _ = try cache.key(for: first, id: "kid-1")
        #expect(Self.text(forDigestOf: first, in: cache) == first)
        #expect(Self.text(forDigestOf: second, in: cache) == nil)
    }

    @Test("evicted entries are not found by digest; the digest index stays within the capacity")
    func evicted() {
        let cache = PublicKeyCache(capacity: 8)
        let texts = (0..<40).map { "not a key \($0)" }
        for text in texts { _ = try? cache.key(for: text) }
        let found = texts.filter { Self.text(forDigestOf: $0, in: cache) != nil }
        #expect(found.count == cache.count && found.count <= 8)
        #expect(found.contains(texts[39]), "the newest entry is kept")
        #expect(!found.contains(texts[0]), "the oldest entry was dropped")
    }

    @Test("a key recorded as checked is indexed by digest only once most lookups hit: a cache that mostly misses spends no digest on it")
    func indexedOnceHitsDominate() throws {
        let cache = PublicKeyCache(capacity: 4)
        let key = try TestKeys.devicePublic.pem
        _ = try cache.key(for: key, id: "kid-1", checkedBefore: true)
        #expect(!cache.prefersDigests)
        #expect(Self.text(forDigestOf: key, in: cache) == nil, "a miss while digests are not preferred is not indexed")
        _ = try cache.key(for: key, id: "kid-1", checkedBefore: true)
        #expect(cache.prefersDigests)
        #expect(Self.text(forDigestOf: key, in: cache) == key, "indexed on its first hit once digests are preferred")
        // A new key recorded as checked, met while digests are still preferred with its miss
        // counted (4 hits in 6 lookups): indexed at once.
        for _ in 0..<2 { _ = try cache.key(for: key, id: "kid-1", checkedBefore: true) }
        let other = try DevicePrivateKey.generate().publicKey.subjectPublicKeyInfoBase64
        _ = try cache.key(for: other, id: "kid-2", checkedBefore: true)
        #expect(Self.text(forDigestOf: other, in: cache) == other)
    }

    /// A row whose text came from the cache by digest says nothing of the key's record: if
    /// the entry is gone when sealing looks (evicted in between, or kept under another id),
    /// the text is parsed again without `checkedBefore`, and must not get the full check.
    @Test("a key parsed on its record's word while digests are preferred is not checked in full when met again without it")
    func recordRemembered() throws {
        let cache = PublicKeyCache(capacity: 1)
        let key = try TestKeys.devicePublic.pem
        _ = try cache.key(for: key, id: "kid-1", checkedBefore: true)
        _ = try cache.key(for: key, id: "kid-1", checkedBefore: true)
        #expect(cache.prefersDigests)
        let other = try DevicePrivateKey.generate().publicKey.subjectPublicKeyInfoBase64
        _ = try cache.key(for: other, id: "kid-2", checkedBefore: true)
        #expect(cache.fullChecks == 0)
        // `other` evicted `key` (capacity 1): met again without the record's word.
        _ = try cache.key(for: key, id: "kid-1")
        #expect(cache.fullChecks == 0, "parsed on the word it was parsed on before")
        // A text never recorded still gets its full check.
        let unrecorded = try DevicePrivateKey.generate().publicKey.subjectPublicKeyInfoBase64
        _ = try cache.key(for: unrecorded, id: "kid-3")
        #expect(cache.fullChecks == 1)
    }

    @Test("the recent hit ratio counts lookups by text: none, then a miss, then hits")
    func hitRatio() {
        let cache = PublicKeyCache(capacity: 4)
        #expect(cache.recentHitRatio == 0 && !cache.prefersDigests)
        _ = try? cache.key(for: "garbage")
        #expect(cache.recentHitRatio == 0 && !cache.prefersDigests)
        _ = try? cache.key(for: "garbage")
        #expect(cache.recentHitRatio == 0.5 && cache.prefersDigests)
        for _ in 0..<2_998 { _ = try? cache.key(for: "garbage") }
        // Older lookups are halved away: the one miss weighs less and less.
        #expect(cache.recentHitRatio > 0.99)
    }
}
