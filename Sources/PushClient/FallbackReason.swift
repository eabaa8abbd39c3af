/// Why the phone shows the fallback (or, for a Live Activity, the non-private layout)
/// instead of the private content. Never carries decrypted bytes.
public enum FallbackReason: Error, Sendable, Equatable, CustomStringConvertible {
    /// The payload carries no `encrypted_data`: sent to a device without a key, or by a
    /// server that predates encryption.
    case legacyPayload
    /// The key store holds no key (the app never generated one, or lost it).
    case noKey
    /// The key store is locked: before the first unlock after a reboot the key
    /// (`AfterFirstUnlockThisDeviceOnly`) cannot be read.
    case locked
    /// The key store failed for another reason (a corrupt key file).
    case keyStoreFailure(String)
    /// `encrypted_data` is there but is no envelope (field missing, not base64, wrong sizes).
    case malformedEnvelope(String)
    /// The content key did not unwrap: sealed for another key, or `encrypted_key` altered.
    case wrongKey
    /// AES-GCM authentication failed: ciphertext, nonce or tag altered.
    case authenticationFailed
    /// The plaintext authenticated but is not the layout the app expects (a server bug).
    case malformedContent(String)
    /// The payload itself is unusable (not JSON, no `aps`): there is not even fallback text.
    case malformedPayload(String)

    public var description: String {
        switch self {
        case .legacyPayload: return "legacy payload: no encrypted_data (device registered without a key, or an old server)"
        case .noKey: return "no key: the key store holds no private key"
        case .locked: return "locked: the key store cannot be read before the first unlock"
        case .keyStoreFailure(let why): return "key store failure: \(why)"
        case .malformedEnvelope(let why): return "malformed envelope: \(why)"
        case .wrongKey: return "wrong key: the content key does not unwrap with this device's key"
        case .authenticationFailed: return "authentication failed: the ciphertext, nonce or tag was altered"
        case .malformedContent(let why): return "malformed content: \(why)"
        case .malformedPayload(let why): return "malformed payload: \(why)"
        }
    }

    /// A short machine-readable name, for one-line output and tests.
    public var code: String {
        switch self {
        case .legacyPayload: return "legacy"
        case .noKey: return "no_key"
        case .locked: return "locked"
        case .keyStoreFailure: return "key_store"
        case .malformedEnvelope: return "malformed_envelope"
        case .wrongKey: return "wrong_key"
        case .authenticationFailed: return "authentication_failed"
        case .malformedContent: return "malformed_content"
        case .malformedPayload: return "malformed_payload"
        }
    }
}
