/// A device private key, whatever holds it (OpenSSL here, Security on Apple platforms).
/// The one operation a phone needs: open an envelope, returning plaintext only once the
/// GCM tag has verified.
public protocol PrivateKeyHandle: Sendable {
    func open(_ envelope: SealedEnvelope) throws(EnvelopeOpenFailure) -> [UInt8]
}

/// Why a backend could not open an envelope; mapped to a `FallbackReason`.
public enum EnvelopeOpenFailure: Error, Sendable, Equatable {
    /// RSA-OAEP unwrapping failed, or did not yield a 32-byte AES key.
    case wrongKey
    /// AES-GCM authentication failed.
    case authenticationFailed
}

/// Why a key store could not give a key.
public enum KeyStoreError: Error, Sendable, Equatable {
    /// Before first unlock: the key exists but cannot be read now. The next launch retries.
    case locked
    /// The stored key cannot be read or parsed.
    case unreadable(String)
}

/// Where the phone keeps its private keys (Keychain, Keystore, a directory for the twin).
///
/// `keyID` nil asks for the current key. A store returns nil when it has no such key; the
/// reader then tries the current key, as clients that ignore `kid` do.
public protocol KeyStore: Sendable {
    func privateKey(for keyID: String?) throws(KeyStoreError) -> (any PrivateKeyHandle)?
}

/// Keys in memory, for tests and for apps that load their keys themselves.
public struct InMemoryKeyStore: KeyStore {
    public var keys: [String: any PrivateKeyHandle]
    /// The key id of the key used when an envelope has no `kid` (or an unknown one).
    public var currentKeyID: String?
    /// Simulates the state before first unlock.
    public var isLocked: Bool

    public init(keys: [String: any PrivateKeyHandle] = [:], currentKeyID: String? = nil, isLocked: Bool = false) {
        self.keys = keys
        self.currentKeyID = currentKeyID
        self.isLocked = isLocked
    }

    /// A store holding one key as the current one.
    public init(current key: any PrivateKeyHandle, keyID: String = "current") {
        self.init(keys: [keyID: key], currentKeyID: keyID)
    }

    public func privateKey(for keyID: String?) throws(KeyStoreError) -> (any PrivateKeyHandle)? {
        if isLocked { throw .locked }
        guard let id = keyID ?? currentKeyID else { return nil }
        return keys[id]
    }
}
