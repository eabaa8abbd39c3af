import COpenSSL
import COpenSSLShims

/// Owns one OpenSSL `EVP_PKEY` and frees it exactly once.
///
/// `@unchecked Sendable` is safe because the key is never mutated after `init`: every
/// operation creates its own `EVP_PKEY_CTX`, and OpenSSL 3 documents concurrent use of one
/// `EVP_PKEY` from many threads as safe when nothing modifies it (its lazy caches are
/// guarded by the key's own lock).
final class EVPKey: @unchecked Sendable {  // safe: see the proof above
    let pointer: OpaquePointer

    /// Takes ownership of a key returned by an OpenSSL constructor.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    var isRSA: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_RSA }

    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// The RSA public exponent, if it fits in 64 bits (nil for a non-RSA key or a larger
    /// exponent: OpenSSL refuses to write a larger one into a `size_t`). Read as a `size_t`
    /// rather than a BIGNUM: `EVP_PKEY_get_bn_param` clears a 2 KiB buffer and allocates the
    /// number, 5.4% of a new key's cost.
    var rsaPublicExponent: UInt64? {
        // `size_t` arrives as `Int`: an exponent of 2^63 or more is negative there, and
        // converting that to UInt64 would trap on a key anyone can register.
        var exponent = 0
        guard EVP_PKEY_get_size_t_param(pointer, "e", &exponent) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return UInt64(UInt(bitPattern: exponent))
    }

    /// OpenSSL's own public-key validation (for RSA, SP 800-56B: an odd modulus without
    /// small factors, an odd exponent in range), which a well-formed but forged key fails.
    var passesPublicKeyCheck: Bool {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            OpenSSLErrorQueue.clear()
            return false
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_public_check(context) == 1 else {
            OpenSSLErrorQueue.clear()
            return false
        }
        return true
    }

    /// A human name of the algorithm for error messages ("EC", "ED25519", …).
    var algorithmName: String {
        if let name = EVP_PKEY_get0_type_name(pointer) { return String(cString: name) }
        return "an unknown algorithm"
    }

    /// DER of the public key as `SubjectPublicKeyInfo` (what Android exports).
    func subjectPublicKeyInfoDER() -> [UInt8] {
        serialize { i2d_PUBKEY(pointer, $0) }
    }

    /// DER of the public key in its type-specific form: PKCS#1 `RSAPublicKey` for RSA
    /// (what iOS `SecKeyCopyExternalRepresentation` exports).
    func typeSpecificPublicDER() -> [UInt8] {
        serialize { i2d_PublicKey(pointer, $0) }
    }

    private func serialize(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8] {
        var output: UnsafeMutablePointer<UInt8>? = nil
        let length = encode(&output)
        guard length > 0, let output else { return [] }
        defer { pushd_openssl_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}
