import COpenSSL
import COpenSSLShims
import Foundation

/// An RSA private key as a device holds it. The server never has one: this type exists for
/// `pushd keygen`, `pushd decrypt`, the demo devices and the tests, and it is the piece a
/// Swift client reuses to open envelopes.
public final class DevicePrivateKey: Sendable {
    let key: EVPKey

    /// Generates a fresh RSA key pair (65537 exponent) with OpenSSL's CSPRNG.
    public static func generate(bits: Int = 2048) throws(SealError) -> DevicePrivateKey {
        guard bits >= 2048, let pointer = pushd_evp_rsa_gen(UInt32(bits)) else {
            throw .openSSL(OpenSSLErrorQueue.drain(or: "RSA key generation failed"))
        }
        return DevicePrivateKey(key: EVPKey(taking: pointer))
    }

    private init(key: EVPKey) {
        self.key = key
    }

    /// Reads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`) or PKCS#1 (`BEGIN RSA PRIVATE KEY`).
    public convenience init(pem: String) throws(PrivateKeyError) {
        let bytes = Array(pem.utf8)
        let pointer: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let pointer else {
            throw .unparseable(OpenSSLErrorQueue.drain(or: "no PEM private key found"))
        }
        let key = EVPKey(taking: pointer)
        guard key.isRSA else { throw .notRSA(algorithm: key.algorithmName) }
        self.init(key: key)
    }

    public var bits: Int { key.bits }

    /// Unencrypted PKCS#8 PEM. Callers write it to a file only they can read.
    public var pkcs8PEM: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key.pointer, nil, nil, 0, nil, nil) == 1 else { return "" }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = pushd_bio_get_mem_data(bio, &data)
        guard length > 0, let data else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }

    /// The matching public key.
    public var publicKey: DevicePublicKey {
        get throws(PublicKeyError) {
            try DevicePublicKey(der: key.subjectPublicKeyInfoDER())
        }
    }

    /// Opens an envelope: unwraps the content key with RSA-OAEP-SHA1, then decrypts and
    /// verifies AES-256-GCM. Returns the plaintext only if the tag verifies.
    public func open(_ envelope: Envelope) throws(EnvelopeOpenError) -> [UInt8] {
        var contentKey = try unwrap(envelope.encryptedKey)
        defer { contentKey.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        guard contentKey.count == AESGCM.keyLength else {
            throw .invalidContentKey(length: contentKey.count)
        }
        return try withBytes(contentKey) { (key) throws(EnvelopeOpenError) in
            try AESGCM.open(envelope.cipherText, key: key, nonce: envelope.nonce, tag: envelope.tag)
        }
    }

    /// Parses and opens an envelope given as JSON (object, or string holding the object).
    public func open(json: some DataProtocol) throws(EnvelopeOpenError) -> [UInt8] {
        try open(Envelope(json: json))
    }

    private func unwrap(_ wrapped: [UInt8]) throws(EnvelopeOpenError) -> [UInt8] {
        guard wrapped.count == (key.bits + 7) / 8,
              let context = try? RSAContext.forOAEPDecryption(with: key)
        else {
            OpenSSLErrorQueue.clear()
            throw .wrongKey
        }
        defer { EVP_PKEY_CTX_free(context.pointer) }
        var output = [UInt8](repeating: 0, count: wrapped.count)
        var outputLength = output.count
        let status = EVP_PKEY_decrypt(context.pointer, &output, &outputLength, wrapped, wrapped.count)
        guard status == 1 else {
            OpenSSLErrorQueue.clear()
            throw .wrongKey
        }
        let contentKey = Array(output.prefix(outputLength))
        output.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
        return contentKey
    }
}
