#if canImport(CryptoKit) && canImport(Security)
import CryptoKit
import Foundation
import Security

/// The Apple backend: Security's `.rsaEncryptionOAEPSHA1` unwraps the content key, CryptoKit's
/// `AES.GCM` opens the content — exactly what the iOS extension and Live Activity enricher
/// call. It cannot be compiled on this project's Linux machines (no Security, no CryptoKit),
/// so it is kept to these few lines and must be built and tested on macOS or in the app.
public final class SecurityPrivateKey: PrivateKeyHandle, @unchecked Sendable {
    // `@unchecked Sendable`: the only stored property is an immutable `SecKey`, and Security
    // documents `SecKey` operations as safe to call from any thread.
    private let key: SecKey

    /// `key` is the device's RSA private key from the Keychain
    /// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`).
    public init(_ key: SecKey) {
        self.key = key
    }

    public func open(_ envelope: SealedEnvelope) throws(EnvelopeOpenFailure) -> [UInt8] {
        guard let unwrapped = SecKeyCreateDecryptedData(
            key, .rsaEncryptionOAEPSHA1, Data(envelope.encryptedKey) as CFData, nil) as Data?,
              unwrapped.count == 32
        else { throw .wrongKey }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: Data(envelope.nonce)), ciphertext: Data(envelope.cipherText),
                tag: Data(envelope.tag))
            return [UInt8](try AES.GCM.open(box, using: SymmetricKey(data: unwrapped)))
        } catch {
            throw .authenticationFailed
        }
    }
}
#endif
