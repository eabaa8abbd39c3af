import Foundation
import PushCrypto
import PushTestSupport
import Testing

/// Envelopes cross between `pushd` and two independent implementations: the JDK's
/// `javax.crypto` with the Android client's exact transformations, and Python's
/// `cryptography`. Every direction, every key format a device registers.
@Suite("Cross-implementation: pushd ⇄ JDK (Android) ⇄ Python cryptography", .serialized)
final class CrossImplementationTests: Sendable {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let python = ProcessInfo.processInfo.environment["PUSHD_PYTHON"] ?? "python3"
    static let keyFormats = ["ios", "android", "pem", "pkcs1-pem"]

    let directory: URL
    let privateKeyPath: String

    init() throws {
        directory = try BuildProducts.temporaryDirectory("cli")
        privateKeyPath = directory.appendingPathComponent("device.pem").path
    }

    /// The directory holds a (test) private key: nothing is left behind.
    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Generates the device key with `pushd keygen`, writing the public key in `format`.
    func keygen(format: String) throws -> String {
        let result = try ChildProcess.run(BuildProducts.pushd, ["keygen", "--out", privateKeyPath, "--format", format])
        #expect(result.status == 0, "keygen: \(result.errorText)")
        let publicPath = directory.appendingPathComponent("device.\(format).pub").path
        try result.standardOutput.write(to: URL(fileURLWithPath: publicPath))
        return publicPath
    }

    /// Where the fixture is compiled; removed when the test process exits.
    static let javaOutput: Result<URL, any Error> = Result {
        let output = try BuildProducts.temporaryDirectory("java")
        atexit {
            if case .success(let output) = CrossImplementationTests.javaOutput { try? FileManager.default.removeItem(at: output) }
        }
        return output
    }

    /// The fixture compiled once per test run (javac is slow to start).
    static let javaClasses: Result<URL, Spawn.Failure> = {
        do {
            let output = try javaOutput.get()
            let result = try ChildProcess.run(
                "javac", ["-d", output.path, fixtures.appendingPathComponent("java/AndroidEnvelope.java").path])
            guard result.status == 0 else { return .failure(Spawn.Failure(description: "javac: \(result.errorText)")) }
            return .success(output)
        } catch {
            return .failure(Spawn.Failure(description: "javac: \(error)"))
        }
    }()

    func java(_ mode: String, key: String, input: Data) throws -> ChildProcess.Result {
        let classes = try Self.javaClasses.get()
        return try ChildProcess.run("java", ["-cp", classes.path, "AndroidEnvelope", mode, key], input: input)
    }

    func python(_ arguments: [String], input: Data = Data()) throws -> ChildProcess.Result {
        try ChildProcess.run(Self.python, [Self.fixtures.appendingPathComponent("python/envelope.py").path] + arguments, input: input)
    }

    static let plaintext = Data(#"{"title":"Anna Svensson","message":"Can we move the interview to 3pm? 🗓️","body":{"sender":{"id":"c-1","displayName":"Åsa","avatarUrl":"https://example.com/a.png"}},"experienceId":"@acme/app","scopeKey":"@acme/app"}"#.utf8)

    @Test("pushd keygen prints every public key format for the key it wrote", arguments: keyFormats)
    func keygenFormats(format: String) throws {
        let publicPath = try keygen(format: format)
        let check = try python(["check-public", privateKeyPath, publicPath])
        #expect(check.outputText == "match", "\(format): \(check.errorText)")
        let permissions = try FileManager.default.attributesOfItem(atPath: privateKeyPath)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
    }

    @Test("pushd encrypt → Python cryptography decrypts", arguments: keyFormats)
    func pushdToPython(format: String) throws {
        let publicPath = try keygen(format: format)
        let sealed = try ChildProcess.run(BuildProducts.pushd, ["encrypt", "--public-key", publicPath], input: Self.plaintext)
        #expect(sealed.status == 0, "\(sealed.errorText)")
        let opened = try python(["decrypt", privateKeyPath], input: sealed.standardOutput)
        #expect(opened.status == 0, "\(opened.errorText)")
        #expect(opened.standardOutput == Self.plaintext)
    }

    @Test("Python cryptography encrypt → pushd decrypt", arguments: keyFormats)
    func pythonToPushd(format: String) throws {
        let publicPath = try keygen(format: format)
        let sealed = try python(["encrypt", publicPath], input: Self.plaintext)
        #expect(sealed.status == 0, "\(sealed.errorText)")
        let opened = try ChildProcess.run(BuildProducts.pushd, ["decrypt", "--private-key", privateKeyPath], input: sealed.standardOutput)
        #expect(opened.status == 0, "\(opened.errorText)")
        #expect(opened.standardOutput == Self.plaintext)
    }

    @Test("pushd encrypt → JDK javax.crypto (Android transformations) decrypts", arguments: ["ios", "android", "pem"])
    func pushdToJava(format: String) throws {
        let publicPath = try keygen(format: format)
        let sealed = try ChildProcess.run(BuildProducts.pushd, ["encrypt", "--public-key", publicPath, "--kid", "k1"], input: Self.plaintext)
        #expect(sealed.status == 0, "\(sealed.errorText)")
        let opened = try java("decrypt", key: privateKeyPath, input: sealed.standardOutput)
        #expect(opened.status == 0, "\(opened.errorText)")
        #expect(opened.standardOutput == Self.plaintext)
    }

    @Test("JDK javax.crypto (Android transformations) encrypt → pushd decrypt")
    func javaToPushd() throws {
        let publicPath = try keygen(format: "android")
        let sealed = try java("encrypt", key: publicPath, input: Self.plaintext)
        #expect(sealed.status == 0, "\(sealed.errorText)")
        let opened = try ChildProcess.run(BuildProducts.pushd, ["decrypt", "--private-key", privateKeyPath], input: sealed.standardOutput)
        #expect(opened.status == 0, "\(opened.errorText)")
        #expect(opened.standardOutput == Self.plaintext)
    }

    @Test("pushd decrypt accepts the envelope as a JSON string holding the object")
    func decryptNestedString() throws {
        let publicPath = try keygen(format: "android")
        let sealed = try ChildProcess.run(BuildProducts.pushd, ["encrypt", "--public-key", publicPath], input: Self.plaintext)
        let nested = try JSONSerialization.data(
            withJSONObject: sealed.outputText.trimmingCharacters(in: .newlines), options: [.fragmentsAllowed])
        let opened = try ChildProcess.run(BuildProducts.pushd, ["decrypt", "--private-key", privateKeyPath], input: nested)
        #expect(opened.status == 0, "\(opened.errorText)")
        #expect(opened.standardOutput == Self.plaintext)
    }

    @Test("pushd decrypt failures: one line on stderr, non-zero exit, no plaintext",
          arguments: [("tamper", "authentication failed"), ("wrong-key", "wrong key"), ("garbage", "malformed envelope")])
    func decryptFailures(kind: String, message: String) throws {
        let publicPath = try keygen(format: "pem")
        let sealed = try ChildProcess.run(BuildProducts.pushd, ["encrypt", "--public-key", publicPath], input: Self.plaintext)
        var input = sealed.standardOutput
        var keyPath = privateKeyPath
        switch kind {
        case "tamper":
            var object = try #require(try JSONSerialization.jsonObject(with: input) as? [String: String])
            let cipherText = try #require(object["cipher_text"])
            var cipher = try #require(Data(base64Encoded: cipherText))
            cipher[0] ^= 0xFF
            object["cipher_text"] = cipher.base64EncodedString()
            input = try JSONSerialization.data(withJSONObject: object)
        case "wrong-key":
            keyPath = directory.appendingPathComponent("other.pem").path
            _ = try ChildProcess.run(BuildProducts.pushd, ["keygen", "--out", keyPath])
        default:
            input = Data("{\"encrypted_key\": 3}".utf8)
        }
        let opened = try ChildProcess.run(BuildProducts.pushd, ["decrypt", "--private-key", keyPath], input: input)
        #expect(opened.status != 0)
        #expect(opened.standardOutput.isEmpty)
        let lines = opened.errorText.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(opened.errorText.contains(message), "\(opened.errorText)")
    }

    @Test("pushd encrypt refuses a bad public key with the crypto module's error")
    func encryptRefusesBadKey() throws {
        let path = directory.appendingPathComponent("bad.pub")
        try Data("MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDPHfrrxgze".utf8).write(to: path)
        let result = try ChildProcess.run(BuildProducts.pushd, ["encrypt", "--public-key", path.path], input: Self.plaintext)
        #expect(result.status == 1)
        #expect(result.standardOutput.isEmpty)
        #expect(result.errorText.contains("public key"))
    }

    @Test("every command explains itself with --help", arguments: ["keygen", "encrypt", "decrypt", "bench"])
    func help(command: String) throws {
        let result = try ChildProcess.run(BuildProducts.pushd, [command, "--help"])
        #expect(result.status == 0)
        #expect(result.outputText.contains("usage: pushd \(command)"))
        let top = try ChildProcess.run(BuildProducts.pushd, ["--help"])
        #expect(top.outputText.contains(command))
    }

    @Test("unknown options are usage errors (exit 64), not ignored")
    func unknownOption() throws {
        let result = try ChildProcess.run(BuildProducts.pushd, ["encrypt", "--public-kee", "x"])
        #expect(result.status == 64)
        #expect(result.errorText.contains("unknown option --public-kee"))
    }
}
