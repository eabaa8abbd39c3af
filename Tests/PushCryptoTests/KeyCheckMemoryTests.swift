import Foundation
import PushCrypto
import Testing

/// OpenSSL's public-key check costs about 5 ms per key, so a key text that passed it once is
/// recorded (by digest) and parsed without it afterwards: only that check is left out, never
/// the algorithm, size or exponent checks, and only for a text recorded as passing.
@Suite("Remembered key checks")
struct KeyCheckMemoryTests {
    /// The 2048-bit MODP prime of RFC 3526 (group 14): a modulus of the right size that is
    /// prime, so anyone could compute the private exponent. Only the public-key check finds that.
    /// (PushWorkerTests' `KeyCheckRecordingTests` spells it out too: this module shares no
    /// test support with it.)
    static let primeModulus: [UInt8] = {
        let hex = """
            FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD\
            EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED\
            EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F\
            83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B\
            E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA0510\
            15728E5A8AACAA68FFFFFFFFFFFFFFFF
            """
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }()

    static let primeKeyText = KeyStrengthTests.pkcs1(modulus: primeModulus, exponent: [0x01, 0x00, 0x01])

    @Test("a prime modulus fails the public-key check; recorded as passed, only that check is left out")
    func primeModulus() throws {
        #expect(Self.primeModulus.count == 256)
        let error = #expect(throws: PublicKeyError.self) { try DevicePublicKey(parsing: Self.primeKeyText) }
        #expect(error == .failedPublicKeyCheck)
        #expect(try DevicePublicKey(parsing: Self.primeKeyText, publicKeyCheck: .passedBefore).bits == 2048)
        // The cheap checks still run on a text recorded as passing.
        let three = KeyStrengthTests.pkcs1(modulus: Self.primeModulus, exponent: [0x03])
        #expect(throws: PublicKeyError.unsupportedExponent(3)) { try DevicePublicKey(parsing: three, publicKeyCheck: .passedBefore) }
        var odd = [UInt8](repeating: 0xa5, count: 257)
        odd[0] = 0x01
        let wrongSize = KeyStrengthTests.pkcs1(modulus: odd, exponent: [0x01, 0x00, 0x01])
        #expect(throws: PublicKeyError.unsupportedSize(bits: 2049)) {
            try DevicePublicKey(parsing: wrongSize, publicKeyCheck: .passedBefore)
        }
    }

    @Test("the cache hands out the digest of each text that passed the full check, once")
    func newlyCheckedDigests() throws {
        let cache = PublicKeyCache(capacity: 8)
        let good = try TestKeys.devicePublic.pkcs1Base64
        let other = try TestKeys.devicePublic.subjectPublicKeyInfoBase64
        _ = try cache.key(for: good)
        _ = try cache.key(for: good)  // a hit: not checked again, not handed out again
        _ = try cache.key(for: other, checkedBefore: true)  // recorded already: nothing to record
        _ = #expect(throws: PublicKeyError.failedPublicKeyCheck) { try cache.key(for: Self.primeKeyText) }
        #expect(cache.takeNewlyChecked() == [DevicePublicKey.checkDigest(ofKeyText: good)])
        #expect(cache.takeNewlyChecked().isEmpty)
    }

    @Test("an evicted key parsed again is not checked again in the same process, and is handed out until taken")
    func evictedKeyNotCheckedTwice() throws {
        let cache = PublicKeyCache(capacity: 1)
        let texts = [try TestKeys.devicePublic.pkcs1Base64, try TestKeys.devicePublic.subjectPublicKeyInfoBase64]
        for round in 0..<3 {
            for text in texts { _ = try cache.key(for: text) }  // capacity 1: every lookup is a miss
            if round == 0 { #expect(cache.takeNewlyChecked().count == 1, "capacity 1: one digest kept between calls") }
        }
        #expect(cache.fullChecks == 2, "each text checked once")
        #expect(cache.takeNewlyChecked().count == 1)
        _ = try cache.key(for: texts[0], checkedBefore: true)
        #expect(cache.takeNewlyChecked().isEmpty, "a text the lookup reports recorded is not handed out")
    }

    @Test("a prime-modulus text recorded as passed is sealed for; not recorded, it is refused")
    func cacheTrustsOnlyTheRecord() throws {
        let cache = PublicKeyCache(capacity: 8)
        #expect(throws: PublicKeyError.failedPublicKeyCheck) { try cache.key(for: Self.primeKeyText, id: "a") }
        let fresh = PublicKeyCache(capacity: 8)
        #expect(try fresh.key(for: Self.primeKeyText, id: "a", checkedBefore: true).bits == 2048)
        #expect(fresh.takeNewlyChecked().isEmpty)
    }
}
