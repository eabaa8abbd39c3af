import COpenSSL
import COpenSSLShims

/// EME-OAEP encoding (RFC 8017 §7.1.1, step 2) with SHA-1, MGF1-SHA-1 and the empty label:
/// the padding the iOS (`.rsaEncryptionOAEPSHA1`) and Android
/// (`OAEPWithSHA-1AndMGF1Padding`) clients remove. The RSA operation itself stays
/// OpenSSL's (`RSA_NO_PADDING` over the encoded block).
///
/// Why encode here rather than let OpenSSL pad: OpenSSL draws the 20-byte seed with a
/// `RAND_bytes` call of its own inside every encryption, about 1.7 µs (a DRBG rekey through
/// the provider layer and a `getpid` system call) whatever the length, the largest cost of
/// an envelope after the modular exponentiation. Taking the seed from the envelope's
/// `RandomReserve` draw, with the content key and nonce, removes that call. The masks are
/// the SHA-1 blocks OpenSSL computes too, through its low-level SHA-1 (see
/// `pushd_sha1_with_counter`). RSA Laboratories' published vectors for a 2048-bit key
/// (`OAEPEncodingTests`) hold the encoding to the standard byte for byte, and every
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
        into encoded: UnsafeMutableRawBufferPointer
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
        try maskGeneration(from: UnsafeRawBufferPointer(seedRegion), xoringInto: dataBlock)
        try maskGeneration(from: UnsafeRawBufferPointer(dataBlock), xoringInto: seedRegion)
    }

    /// MGF1-SHA-1 (RFC 8017 §B.2.1): XORs SHA-1(seed ‖ counter) for counter 0, 1, … over
    /// `target`, block by block. The digest buffer is wiped afterwards: the mask over the
    /// data block is what hides the content key.
    private static func maskGeneration(
        from seed: UnsafeRawBufferPointer, xoringInto target: UnsafeMutableRawBufferPointer
    ) throws(SealError) {
        var mask = (UInt64(0), UInt64(0), UInt64(0))  // 24 bytes, room for one 20-byte SHA-1 digest
        defer { OPENSSL_cleanse(&mask, MemoryLayout.size(ofValue: mask)) }
        try withUnsafeMutableBytes(of: &mask) { (mask) throws(SealError) in
            var offset = 0
            var counter: UInt32 = 0
            while offset < target.count {
                guard pushd_sha1_with_counter(
                    seed.baseAddress?.assumingMemoryBound(to: UInt8.self), seed.count, counter,
                    mask.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1
                else { throw .openSSL(OpenSSLErrorQueue.drain(or: "SHA-1 failed")) }
                let count = min(hashLength, target.count - offset)
                for index in 0..<count { target[offset + index] ^= mask[index] }
                offset += count
                counter += 1
            }
        }
    }
}
