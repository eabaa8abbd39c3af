import COpenSSL
@testable import PushCrypto
import Testing

/// The OAEP padding sealing applies itself (`OAEPEncoding`) before OpenSSL's bare RSA
/// operation: held to RSA Laboratories' published vectors, and to OpenSSL's own OAEP
/// decryption for every key size devices register.
@Suite("RSA-OAEP-SHA1 encoding")
struct OAEPEncodingTests {
    /// Wraps `message` with `seed` as sealing does; returns the ciphertext and what the
    /// padded-block scratch holds afterwards.
    static func wrap(_ message: [UInt8], seed: [UInt8], for key: DevicePublicKey) throws -> (cipherText: [UInt8], scratch: [UInt8]) {
        var encoded = [UInt8](repeating: 0xa5, count: key.modulusBytes)
        var output = [UInt8](repeating: 0, count: key.modulusBytes)
        try message.withUnsafeBytes { message in
            try seed.withUnsafeBytes { seed in
                try encoded.withUnsafeMutableBytes { encoded in
                    try output.withUnsafeMutableBytes { output in
                        try key.wrap(message, seed: seed, encoded: encoded, into: output)
                    }
                }
            }
        }
        return (output, encoded)
    }

    /// OpenSSL's OAEP-SHA1 decryption of `cipherText`, or nil if it refuses the padding.
    static func openSSLDecrypt(_ cipherText: [UInt8], with key: DevicePrivateKey) throws -> [UInt8]? {
        let context = try RSAContext.forOAEPDecryption(with: key.key)
        defer { EVP_PKEY_CTX_free(context.pointer) }
        var output = [UInt8](repeating: 0, count: cipherText.count)
        var length = output.count
        guard EVP_PKEY_decrypt(context.pointer, &output, &length, cipherText, cipherText.count) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return Array(output[..<length])
    }

    static let largerKeys: [Int: DevicePrivateKey] = {
        do { return [3072: try DevicePrivateKey.generate(bits: 3072), 4096: try DevicePrivateKey.generate(bits: 4096)] } catch {
            fatalError("key generation failed: \(error)")
        }
    }()

    @Test("RSA Laboratories' 2048-bit vectors come out byte for byte", arguments: RSALabsOAEPExample10.encryptions)
    func publishedVectors(_ vector: RSALabsOAEPExample10.Encryption) throws {
        let key = try DevicePublicKey(pkcs1DER: RSALabsOAEPExample10.publicKeyDER, check: .run)
        #expect(key.bits == 2048)
        let wrapped = try Self.wrap(vector.message, seed: vector.seed, for: key)
        #expect(wrapped.cipherText == vector.cipherText)
        #expect(wrapped.scratch.allSatisfy { $0 == 0 }, "the padded block determines the message: it must be wiped")
    }

    @Test("OpenSSL's OAEP decryption recovers every message length up to the largest, at every key size",
          arguments: [2048, 3072, 4096])
    func opensWithOpenSSL(bits: Int) throws {
        let privateKey = bits == 2048 ? TestKeys.device : try #require(Self.largerKeys[bits])
        let publicKey = try privateKey.publicKey
        let longest = OAEPEncoding.maximumMessageLength(modulusBytes: publicKey.modulusBytes)
        #expect(longest == bits / 8 - 42)
        var cipherTexts = Set<[UInt8]>()
        for length in [0, 1, 16, 32, 33, longest - 1, longest] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 89 &+ length) }
            let seed = (0..<OAEPEncoding.seedLength).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ length &+ bits) }
            let wrapped = try Self.wrap(message, seed: seed, for: publicKey)
            #expect(try Self.openSSLDecrypt(wrapped.cipherText, with: privateKey) == message, "length \(length)")
            cipherTexts.insert(wrapped.cipherText)
        }
        #expect(cipherTexts.count == 7)
    }

    @Test("the same content key under two seeds gives two ciphertexts, each opening to the key")
    func seedRandomises() throws {
        let publicKey = try TestKeys.devicePublic
        let contentKey = [UInt8](repeating: 0x42, count: 32)
        let first = try Self.wrap(contentKey, seed: [UInt8](repeating: 1, count: 20), for: publicKey)
        let second = try Self.wrap(contentKey, seed: [UInt8](repeating: 2, count: 20), for: publicKey)
        #expect(first.cipherText != second.cipherText)
        #expect(try Self.openSSLDecrypt(first.cipherText, with: TestKeys.device) == contentKey)
        #expect(try Self.openSSLDecrypt(second.cipherText, with: TestKeys.device) == contentKey)
    }
}
