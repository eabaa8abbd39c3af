#if canImport(PushCrypto)
import Foundation
import PushCrypto

/// Private keys as PEM files in a directory, one per key id (`<kid>.pem`), for the
/// `pushd phone` twin: what the Keychain or Keystore holds on a real phone. Keeping the
/// previous keys is what lets a rotated phone read pushes sealed before the rotation.
public struct DirectoryKeyStore: KeyStore {
    public let directory: URL
    public let currentKeyID: String?
    /// Simulates the state before first unlock.
    public let isLocked: Bool

    public init(directory: URL, currentKeyID: String?, isLocked: Bool = false) {
        self.directory = directory
        self.currentKeyID = currentKeyID
        self.isLocked = isLocked
    }

    public func privateKey(for keyID: String?) throws(KeyStoreError) -> (any PrivateKeyHandle)? {
        if isLocked { throw .locked }
        // `kid` comes from the payload: only plain names, never a path.
        guard let id = keyID ?? currentKeyID, Self.isSafeName(id) else { return nil }
        let file = directory.appendingPathComponent(id + ".pem")
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        do {
            return try OpenSSLPrivateKey(pem: String(decoding: data, as: UTF8.self))
        } catch {
            throw .unreadable("\(file.lastPathComponent): \(error)")
        }
    }

    static func isSafeName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }
}
#endif
