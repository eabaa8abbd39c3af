import COpenSSL
import COpenSSLShims
import Foundation

/// Signs JSON Web Tokens for the two services: ES256 for APNs token authentication (the
/// `.p8` key from Apple) and RS256 for the Google OAuth2 service-account assertion.
///
/// Safe to use from many tasks at once: each signature gets its own OpenSSL context.
public final class JWSSigner: Sendable {
    public enum Algorithm: String, Sendable {
        case es256 = "ES256"
        case rs256 = "RS256"
    }

    public let algorithm: Algorithm
    private let key: EVPKey

    /// Loads a PEM private key (PKCS#8 or traditional) and checks it suits `algorithm`:
    /// a P-256 EC key for ES256, an RSA key of 2048 bits or more for RS256.
    public init(algorithm: Algorithm, privateKeyPEM: String) throws(JWSSignerError) {
        let bytes = Array(privateKeyPEM.utf8)
        let pointer: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let pointer else {
            throw .invalidKey(OpenSSLErrorQueue.drain(or: "not a PEM private key"))
        }
        let key = EVPKey(taking: pointer)
        switch algorithm {
        case .es256:
            guard EVP_PKEY_get_base_id(key.pointer) == EVP_PKEY_EC, key.bits == 256 else {
                throw .invalidKey("ES256 needs a P-256 EC private key (an APNs .p8 key), got \(key.algorithmName)-\(key.bits)")
            }
        case .rs256:
            guard key.isRSA, key.bits >= 2048 else {
                throw .invalidKey("RS256 needs an RSA private key of 2048 bits or more, got \(key.algorithmName)-\(key.bits)")
            }
        }
        self.algorithm = algorithm
        self.key = key
    }

    /// A signed compact JWS: `base64url(header).base64url(claims).base64url(signature)`.
    /// `header` and `claims` are JSON object texts, signed as given.
    public func token(header: String, claims: String) throws(JWSSignerError) -> String {
        let signingInput = Base64.encodeURL(Array(header.utf8)) + "." + Base64.encodeURL(Array(claims.utf8))
        let signature = try sign(Array(signingInput.utf8))
        return signingInput + "." + Base64.encodeURL(signature)
    }

    /// The JWS signature of `message`: for ES256 the raw 64-byte r‖s (JWS, RFC 7518
    /// §3.4), not the DER structure OpenSSL produces; for RS256 PKCS#1 v1.5 over SHA-256.
    public func sign(_ message: [UInt8]) throws(JWSSignerError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed("cannot allocate a digest context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else {
            throw .signingFailed(OpenSSLErrorQueue.drain(or: "signing init failed"))
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw .signingFailed(OpenSSLErrorQueue.drain(or: "signing failed"))
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw .signingFailed(OpenSSLErrorQueue.drain(or: "signing failed"))
        }
        signature.removeSubrange(length...)
        switch algorithm {
        case .rs256: return signature
        case .es256: return try Self.rawECDSASignature(fromDER: signature)
        }
    }

    /// Converts an ECDSA `SEQUENCE { r INTEGER, s INTEGER }` to r‖s, each left-padded to 32 bytes.
    static func rawECDSASignature(fromDER der: [UInt8]) throws(JWSSignerError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw .signingFailed("OpenSSL returned an unreadable ECDSA signature") }
        defer { ECDSA_SIG_free(parsed) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(parsed, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        let ok = raw.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        guard ok else { throw .signingFailed("ECDSA signature component does not fit 32 bytes") }
        return raw
    }
}

public enum JWSSignerError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidKey(String)
    case signingFailed(String)

    public var description: String {
        switch self {
        case .invalidKey(let why): return "invalid signing key: \(why)"
        case .signingFailed(let why): return "JWT signing failed: \(why)"
        }
    }
}
