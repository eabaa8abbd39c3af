import COpenSSL
import COpenSSLShims

/// AES-256-GCM with a 12-byte nonce, a 16-byte tag kept apart from the ciphertext and no
/// associated data: the content cipher of the envelope.
enum AESGCM {
    static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    /// The cipher, fetched from the provider once. Fetching by name on every message (what
    /// `EVP_aes_256_gcm()` does implicitly in OpenSSL 3) costs a global lookup each time.
    /// `nonisolated(unsafe)` is safe: a fetched `EVP_CIPHER` is immutable and OpenSSL
    /// documents it as shareable between threads.
    nonisolated(unsafe) static let cipher: OpaquePointer? = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)

    /// Loads a key and nonce into an encryption context bound to the cipher (see
    /// `SealingContext`), replacing whatever key it held. Passing a nil cipher keeps the
    /// context's provider state and only sets up the key schedule and nonce.
    static func load(key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, into context: OpaquePointer) -> Bool {
        EVP_EncryptInit_ex2(context, nil, bytes(key), bytes(nonce), nil) == 1
    }

    /// Encrypts `plaintext` into `cipherText` (same length) and writes the 16-byte tag, with
    /// a context that `load` has just given a fresh key and nonce.
    static func encrypt(
        _ plaintext: UnsafeRawBufferPointer, cipherText: UnsafeMutableRawBufferPointer,
        tag: UnsafeMutableRawBufferPointer, in context: OpaquePointer
    ) throws(SealError) {
        precondition(cipherText.count >= plaintext.count && tag.count >= tagLength)
        // An empty plaintext still needs a valid output pointer for OpenSSL.
        var scratch: UInt8 = 0
        let output = cipherText.baseAddress?.assumingMemoryBound(to: UInt8.self)
            ?? withUnsafeMutablePointer(to: &scratch) { $0 }
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        guard plaintext.isEmpty
                || EVP_EncryptUpdate(context, output, &written, bytes(plaintext), Int32(plaintext.count)) == 1,
              EVP_EncryptFinal_ex(context, output + Int(written), &finalWritten) == 1,
              Int(written + finalWritten) == plaintext.count,
              pushd_gcm_get_tag(context, tag.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(tagLength)) == 1
        else { throw .openSSL(OpenSSLErrorQueue.drain(or: "AES-GCM encryption failed")) }
    }

    /// Decrypts and verifies. The plaintext is returned only after the tag has been
    /// checked; on failure the partially decrypted buffer is wiped, never returned.
    static func open(
        _ cipherText: [UInt8], key: UnsafeRawBufferPointer, nonce: [UInt8], tag: [UInt8]
    ) throws(EnvelopeOpenError) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw .authenticationFailed }
        defer { EVP_CIPHER_CTX_free(context) }
        var plaintext = [UInt8](repeating: 0, count: cipherText.count)
        var tag = tag
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        let verified = nonce.withUnsafeBytes { nonce in
            cipherText.withUnsafeBytes { input in
                plaintext.withUnsafeMutableBufferPointer { out -> Bool in
                    var scratch: UInt8 = 0
                    let outPointer = out.baseAddress ?? withUnsafeMutablePointer(to: &scratch) { $0 }
                    guard EVP_DecryptInit_ex2(context, cipher, bytes(key), bytes(nonce), nil) == 1 else { return false }
                    guard input.isEmpty
                        || EVP_DecryptUpdate(context, outPointer, &written, bytes(input), Int32(input.count)) == 1
                    else { return false }
                    guard tag.withUnsafeMutableBufferPointer({ pushd_gcm_set_tag(context, $0.baseAddress, Int32(tagLength)) }) == 1
                    else { return false }
                    return EVP_DecryptFinal_ex(context, outPointer + Int(written), &finalWritten) == 1
                }
            }
        }
        guard verified, Int(written + finalWritten) == cipherText.count else {
            OpenSSLErrorQueue.clear()
            plaintext.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
            throw .authenticationFailed
        }
        return plaintext
    }

    static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
        buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }
}
