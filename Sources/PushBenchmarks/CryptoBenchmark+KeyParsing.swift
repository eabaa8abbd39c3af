import Dispatch
import PushCrypto

extension CryptoBenchmark {
    /// What a key the worker's cache does not hold costs, by the format devices register
    /// (iOS PKCS#1, Android SubjectPublicKeyInfo) and by whether OpenSSL's public-key check
    /// runs (a key never checked) or is left out (a key recorded in `pushd_public_key_checks`):
    /// microseconds per key for parsing it and sealing its first envelope (a new key's first
    /// RSA operation sets up its context and Montgomery form), each text new to the cache.
    struct KeyParsingCost {
        var pkcs1Checked: Double
        var pkcs1Recorded: Double
        var spkiChecked: Double
        var spkiRecorded: Double
    }

    static func keyParsingCost(
        _ key: DevicePublicKey, plaintext: [UInt8], checkedKeys: Int = 100, recordedKeys: Int = 1000
    ) -> KeyParsingCost {
        KeyParsingCost(
            pkcs1Checked: microsecondsPerKey(key.pkcs1Base64, plaintext, count: checkedKeys, recorded: false),
            pkcs1Recorded: microsecondsPerKey(key.pkcs1Base64, plaintext, count: recordedKeys, recorded: true),
            spkiChecked: microsecondsPerKey(key.subjectPublicKeyInfoBase64, plaintext, count: checkedKeys, recorded: false),
            spkiRecorded: microsecondsPerKey(key.subjectPublicKeyInfoBase64, plaintext, count: recordedKeys, recorded: true))
    }

    /// Parses `count` texts of the key that differ in trailing whitespace (so none is a hit)
    /// and seals one envelope for each.
    private static func microsecondsPerKey(_ text: String, _ plaintext: [UInt8], count: Int, recorded: Bool) -> Double {
        let texts = (0..<count).map { index in
            text + String((0..<12).map { bit in index & (1 << bit) == 0 ? " " : "\n" })
        }
        let cache = PublicKeyCache(capacity: count + 1)
        let start = DispatchTime.now().uptimeNanoseconds
        var parsed = 0
        for text in texts {
            if let key = try? cache.key(for: text, checkedBefore: recorded), sealOnce(plaintext, key) { parsed += 1 }
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e3
        return parsed == count ? elapsed / Double(count) : .nan
    }
}
