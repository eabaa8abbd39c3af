import PushCommandLine
import Foundation
import PushClient
import PushCrypto

/// A `pushd phone` twin on disk, under `${PUSHD_STATE_DIR:-~/.pushd-local}/phone/<name>/`:
///
///     phone.json        this file's fields (no key material)
///     keys/<kid>.pem    private keys, 0600, every one ever generated (rotation)
///     keys/<kid>.pub    the public key text exactly as registered
///     staging/          Live Activity enrichment, as the app group's defaults
struct PhoneProfile: Codable {
    var name: String
    /// `ios` (PKCS#1 key export) or `android` (SubjectPublicKeyInfo export).
    var platform: String
    var recipient: String
    var app: String
    var environment: String
    var token: String
    /// Extra tokens that reach this phone: Live Activity push-to-start and update tokens.
    var extraTokens: [String]
    var deviceID: Int64?
    var currentKeyID: String

    static func root() -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["PUSHD_STATE_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.pushd-local"
        return URL(fileURLWithPath: base).appendingPathComponent("phone")
    }

    static func directory(name: String) throws(CLIError) -> URL {
        guard !name.isEmpty, name.count <= 64,
              name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "-" || $0 == "_" })
        else { throw .usage("--name must be 1-64 letters, digits, '-' or '_'") }
        return root().appendingPathComponent(name)
    }

    static func load(name: String) throws(CLIError) -> (PhoneProfile, URL) {
        let directory = try directory(name: name)
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent("phone.json").path) else {
            throw .failure("no phone \"\(name)\" in \(directory.path); create it with `pushd phone init --name \(name) ...`")
        }
        do {
            return (try JSONDecoder().decode(PhoneProfile.self, from: data), directory)
        } catch {
            throw .failure("\(directory.path)/phone.json is unreadable: \(error)")
        }
    }

    func save(in directory: URL) throws(CLIError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(self),
              FileManager.default.createFile(atPath: directory.appendingPathComponent("phone.json").path, contents: data)
        else { throw .failure("cannot write \(directory.path)/phone.json") }
    }

    func keyStore(in directory: URL, locked: Bool) -> DirectoryKeyStore {
        DirectoryKeyStore(directory: directory.appendingPathComponent("keys"), currentKeyID: currentKeyID, isLocked: locked)
    }

    /// Generates a key pair as the app does at first launch and stores it; returns the
    /// public key text the app would report (iOS: base64 PKCS#1, Android: base64 SPKI) and
    /// its key id (`pushd_key_id`: the first 16 hex digits of SHA-256 over that text).
    ///
    /// `importing` stores an existing private key instead (a demo device's, made with
    /// `pushd keygen`).
    static func generateKey(
        platform: String, in directory: URL, importing existing: DevicePrivateKey? = nil
    ) throws(CLIError) -> (publicKey: String, keyID: String) {
        let keys = directory.appendingPathComponent("keys")
        let privateKey: DevicePrivateKey
        let publicKey: String
        do {
            privateKey = try existing ?? DevicePrivateKey.generate()
            let exported = try privateKey.publicKey
            publicKey = platform == "ios" ? exported.pkcs1Base64 : exported.subjectPublicKeyInfoBase64
        } catch {
            throw .failure("key generation failed: \(error)")
        }
        let keyID = String(Digest.sha256Hex(publicKey).prefix(16))
        do {
            try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .failure("cannot create \(keys.path): \(error)")
        }
        guard writePrivate(privateKey.pkcs8PEM, to: keys.appendingPathComponent(keyID + ".pem").path),
              FileManager.default.createFile(atPath: keys.appendingPathComponent(keyID + ".pub").path, contents: Data(publicKey.utf8))
        else { throw .failure("cannot write the key files in \(keys.path)") }
        return (publicKey, keyID)
    }

    /// Writes a private key into a file that is 0600 from its creation (never readable by
    /// others, even for a moment, whatever the directory's mode).
    private static func writePrivate(_ text: String, to path: String) -> Bool {
        unlink(path)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == bytes.count
    }
}
