/// Why a device's public key was refused. The same error is given at registration and at
/// encryption time, so an operator sees one message whichever side caught the key.
public enum PublicKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not base64 DER nor PEM of a PKCS#1 `RSAPublicKey` or a `SubjectPublicKeyInfo`.
    case unparseable(String)
    /// A well-formed key of another algorithm (EC, Ed25519, …): the clients only use RSA.
    case notRSA(algorithm: String)
    /// An RSA key below the 2048-bit minimum the scheme promises.
    case tooSmall(bits: Int)
    /// An RSA key of 2048 bits or more whose size no device generates (2048, 3072, 4096).
    case unsupportedSize(bits: Int)
    /// A public exponent other than 65537 (nil: larger than 64 bits).
    case unsupportedExponent(UInt64?)
    /// Well-formed, but OpenSSL's public-key check fails (an even modulus, small factors).
    case failedPublicKeyCheck

    public var description: String {
        switch self {
        case .unparseable(let why):
            return "public key is not a base64 DER or PEM RSA public key (PKCS#1 or SubjectPublicKeyInfo): \(why)"
        case .notRSA(let algorithm):
            return "public key is \(algorithm), not RSA: devices must register an RSA-2048 (or larger) key"
        case .tooSmall(let bits):
            return "public key is RSA-\(bits): keys under 2048 bits are refused"
        case .unsupportedSize(let bits):
            return "public key is RSA-\(bits): only 2048, 3072 and 4096-bit keys are accepted"
        case .unsupportedExponent(let exponent):
            let shown = exponent.map(String.init) ?? "larger than 64 bits"
            return "public key has exponent \(shown): only 65537 is accepted"
        case .failedPublicKeyCheck:
            return "public key fails OpenSSL's public-key check (not a valid RSA modulus)"
        }
    }

    /// At most 32 characters of untrusted text (a PEM label), so that an error, a log line or
    /// a `key.invalid` event never carries key material.
    static func excerpt(_ text: String) -> String {
        text.count <= 32 ? text : text.prefix(32) + "…"
    }
}

/// Why a private key could not be loaded (only tools and tests hold private keys: the
/// server never does).
public enum PrivateKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    case unparseable(String)
    case notRSA(algorithm: String)

    public var description: String {
        switch self {
        case .unparseable(let why): return "private key is not a PEM RSA private key: \(why)"
        case .notRSA(let algorithm): return "private key is \(algorithm), not RSA"
        }
    }
}

/// An encryption failure. With a valid key these come only from OpenSSL itself running out
/// of memory or entropy, never from the input, so callers treat them as internal errors.
public enum SealError: Error, Equatable, Sendable, CustomStringConvertible {
    case openSSL(String)

    public var description: String {
        switch self {
        case .openSSL(let why): return "encryption failed inside OpenSSL: \(why)"
        }
    }
}

/// Why an envelope did not open. No case ever carries decrypted bytes: plaintext is only
/// returned after the GCM tag has been verified.
public enum EnvelopeOpenError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The JSON shape is wrong: not an object (or a string holding one), a field missing or
    /// not a string, invalid base64, or a nonce/tag of the wrong length.
    case malformedEnvelope(String)
    /// RSA-OAEP unwrapping failed: the envelope was sealed for another device key, or its
    /// `encrypted_key` was altered.
    case wrongKey
    /// The unwrapped content key is not 32 bytes, so it is not an AES-256 key.
    case invalidContentKey(length: Int)
    /// AES-GCM authentication failed: the ciphertext, nonce or tag was altered.
    case authenticationFailed

    public var description: String {
        switch self {
        case .malformedEnvelope(let why): return "malformed envelope: \(why)"
        case .wrongKey: return "wrong key: the envelope's encrypted_key does not unwrap with this private key"
        case .invalidContentKey(let length): return "invalid content key: unwrapped \(length) bytes, AES-256 needs 32"
        case .authenticationFailed: return "authentication failed: ciphertext, nonce or tag was tampered with"
        }
    }
}
