#if canImport(PushCrypto)
import PushCrypto

/// The OpenSSL backend (Linux, the `pushd phone` twin, the tests): `PushCrypto`'s own
/// RSA-OAEP-SHA1 and AES-256-GCM, the same code that seals on the server side.
public struct OpenSSLPrivateKey: PrivateKeyHandle {
    public let key: DevicePrivateKey

    public init(_ key: DevicePrivateKey) {
        self.key = key
    }

    /// Reads a PEM private key (PKCS#8 or PKCS#1).
    public init(pem: String) throws(PrivateKeyError) {
        key = try DevicePrivateKey(pem: pem)
    }

    public func open(_ envelope: SealedEnvelope) throws(EnvelopeOpenFailure) -> [UInt8] {
        let parts = Envelope(
            encryptedKey: envelope.encryptedKey, cipherText: envelope.cipherText, nonce: envelope.nonce,
            tag: envelope.tag, keyID: envelope.keyID)
        do {
            return try key.open(parts)
        } catch {
            switch error {
            case .authenticationFailed: throw .authenticationFailed
            // Sizes are checked by `SealedEnvelope`; anything else means the key did not fit.
            case .wrongKey, .invalidContentKey, .malformedEnvelope: throw .wrongKey
            }
        }
    }
}
#endif
