import COpenSSL

/// EME-OAEP encoding (RFC 8017 §7.1.1, step 2) with SHA-1, MGF1-SHA-1 and the empty label:
/// the padding the iOS (`.rsaEncryptionOAEPSHA1`) and Android
/// (`OAEPWithSHA-1AndMGF1Padding`) clients remove. The RSA operation itself stays
/// OpenSSL's (`RSA_NO_PADDING` over the encoded block).
///
/// Why encode here rather than let OpenSSL pad: OpenSSL draws the 20-byte seed with a
/// `RAND_bytes` call of its own inside every encryption, about 1.7 µs (a DRBG rekey through
/// the provider layer and a `getpid` system call) whatever the length, the largest cost of
/// an envelope after the modular exponentiation. Taking the seed from the envelope's
/// `RandomReserve` draw, with the content key and nonce, removes that call; the encoding is
/// the same thirteen SHA-1 blocks OpenSSL computes. RSA Laboratories' published vectors for
/// a 2048-bit key (`OAEPEncodingTests`) hold it to the standard byte for byte, and every
/// envelope still opens with OpenSSL's own OAEP decryption.
enum OAEPEncoding {
    static let hashLength = 20
    static let seedLength = hashLength

    /// The longest message a `modulusBytes`-byte block can carry: k − 2·hLen − 2.
    static func maximumMessageLength(modulusBytes: Int) -> Int { modulusBytes - 2 * hashLength - 2 }

    /// SHA-1 of the empty label, the first `hashLength` bytes of every data block.
    private static let emptyLabelHash: [UInt8] = [
        0xda, 0x39, 0xa3, 0xee, 0x5e, 0x6b, 0x4b, 0x0d, 0x32, 0x55,
        0xbf, 0xef, 0x95, 0x60, 0x18, 0x90, 0xaf, 0xd8, 0x07, 0x09,
    ]

    /// Writes EM = 0x00 ‖ maskedSeed ‖ maskedDB for `message` into `encoded`, the block's
    /// whole length (the modulus size). `encoded` then determines the message: the caller
    /// wipes it once the RSA operation has consumed it.
    static func encode(
        _ message: UnsafeRawBufferPointer, seed: UnsafeRawBufferPointer,
        into encoded: UnsafeMutableRawBufferPointer, using sha1: SHA1Digester
    ) throws(SealError) {
        let blockLength = encoded.count
        precondition(seed.count == seedLength && message.count <= maximumMessageLength(modulusBytes: blockLength))
        let seedRegion = UnsafeMutableRawBufferPointer(rebasing: encoded[1..<1 + hashLength])
        let dataBlock = UnsafeMutableRawBufferPointer(rebasing: encoded[(1 + hashLength)...])
        // DB = lHash ‖ PS (zeros) ‖ 0x01 ‖ M
        encoded[0] = 0
        seedRegion.copyMemory(from: seed)
        emptyLabelHash.withUnsafeBytes { dataBlock.copyMemory(from: $0) }
        let messageStart = dataBlock.count - message.count
        UnsafeMutableRawBufferPointer(rebasing: dataBlock[hashLength..<messageStart - 1]).initializeMemory(as: UInt8.self, repeating: 0)
        dataBlock[messageStart - 1] = 0x01
        UnsafeMutableRawBufferPointer(rebasing: dataBlock[messageStart...]).copyMemory(from: message)
        // maskedDB = DB ⊕ MGF1(seed), then maskedSeed = seed ⊕ MGF1(maskedDB).
        try maskGeneration(from: UnsafeRawBufferPointer(seedRegion), xoringInto: dataBlock, using: sha1)
        try maskGeneration(from: UnsafeRawBufferPointer(dataBlock), xoringInto: seedRegion, using: sha1)
    }

    /// MGF1-SHA-1 (RFC 8017 §B.2.1): XORs SHA-1(seed ‖ counter) for counter 0, 1, … over
    /// `target`, block by block. The digest buffer is wiped afterwards: the mask over the
    /// data block is what hides the content key.
    private static func maskGeneration(
        from seed: UnsafeRawBufferPointer, xoringInto target: UnsafeMutableRawBufferPointer,
        using sha1: SHA1Digester
    ) throws(SealError) {
        var mask = (UInt64(0), UInt64(0), UInt64(0))  // 24 bytes: one SHA-1 digest
        defer { OPENSSL_cleanse(&mask, MemoryLayout.size(ofValue: mask)) }
        try withUnsafeMutableBytes(of: &mask) { (mask) throws(SealError) in
            var offset = 0
            var counter: UInt32 = 0
            while offset < target.count {
                try sha1.digest(seed, counter: counter, into: mask)
                let count = min(hashLength, target.count - offset)
                for index in 0..<count { target[offset + index] ^= mask[index] }
                offset += count
                counter += 1
            }
        }
    }
}

/// A reusable SHA-1 context for `OAEPEncoding`. One owner at a time (it lives in a pooled
/// `SealingContext`): not thread-safe.
final class SHA1Digester {
    /// Fetched once: `EVP_sha1()` looks the implementation up by name on every init.
    /// `nonisolated(unsafe)` is safe: a fetched `EVP_MD` is immutable and shareable.
    nonisolated(unsafe) private static let algorithm: OpaquePointer? = EVP_MD_fetch(nil, "SHA1", nil)
    private let context: OpaquePointer

    private init(context: OpaquePointer) {
        self.context = context
    }

    static func make() throws(SealError) -> SHA1Digester {
        guard algorithm != nil, let context = EVP_MD_CTX_new() else {
            throw .openSSL(OpenSSLErrorQueue.drain(or: "SHA-1 is unavailable"))
        }
        return SHA1Digester(context: context)
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    /// SHA-1(bytes ‖ big-endian counter) into the first 20 bytes of `output`.
    func digest(_ bytes: UnsafeRawBufferPointer, counter: UInt32, into output: UnsafeMutableRawBufferPointer) throws(SealError) {
        precondition(output.count >= OAEPEncoding.hashLength)
        var counterBytes = counter.bigEndian
        var length: UInt32 = 0
        guard EVP_DigestInit_ex2(context, Self.algorithm, nil) == 1,
              EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1,
              EVP_DigestUpdate(context, &counterBytes, 4) == 1,
              EVP_DigestFinal_ex(context, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length) == 1,
              length == OAEPEncoding.hashLength
        else { throw .openSSL(OpenSSLErrorQueue.drain(or: "SHA-1 failed")) }
    }
}
