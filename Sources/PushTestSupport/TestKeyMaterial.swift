import Foundation
/// Credentials made up for tests; they stay out of the shipped modules, and test support
/// does not reach around `PushCrypto` to OpenSSL: the `openssl` tool (installed with the
/// build dependencies) makes them.
public enum TestKeyMaterial {
    public struct GenerationError: Error, CustomStringConvertible {
        public let description: String
    }

    /// A fresh P-256 private key in PKCS#8 PEM, the format of Apple's `.p8` files.
    public static func p256PrivateKeyPEM() throws(GenerationError) -> String {
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run(
                "openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"], timeout: .seconds(30))
        } catch {
            throw GenerationError(description: "cannot run openssl: \(error)")
        }
        guard result.status == 0, result.outputText.hasPrefix("-----BEGIN PRIVATE KEY-----") else {
            throw GenerationError(description: "openssl genpkey failed (\(result.status)): \(result.errorText)")
        }
        return result.outputText
    }

    /// A fresh self-signed CA certificate (P-256, valid a day, `CN=name`), written with its
    /// key as `name.pem` and `name.key` in `directory`; returns the certificate's PEM.
    @discardableResult
    public static func certificateAuthority(named name: String, in directory: URL) throws(GenerationError) -> Data {
        try run("req", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path(name, "key", in: directory), "-out", path(name, "pem", in: directory), "-days", "1", "-subj", "/CN=\(name)",
        ])
        return try contents(path(name, "pem", in: directory))
    }

    /// A fresh certificate for `CN=name` signed by the CA `authority` made by
    /// `certificateAuthority(named:in:)` in the same directory; returns its PEM.
    public static func certificate(named name: String, signedBy authority: String, in directory: URL) throws(GenerationError) -> Data {
        try run("req", [
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path(name, "key", in: directory), "-out", path(name, "csr", in: directory), "-subj", "/CN=\(name)",
        ])
        try run("x509 -req", [
            "x509", "-req", "-in", path(name, "csr", in: directory), "-CA", path(authority, "pem", in: directory),
            "-CAkey", path(authority, "key", in: directory), "-set_serial", "2", "-days", "1", "-out", path(name, "pem", in: directory),
        ])
        return try contents(path(name, "pem", in: directory))
    }

    private static func path(_ name: String, _ suffix: String, in directory: URL) -> String {
        directory.appendingPathComponent("\(name).\(suffix)").path
    }

    private static func run(_ what: String, _ arguments: [String]) throws(GenerationError) {
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run("openssl", arguments, timeout: .seconds(30))
        } catch {
            throw GenerationError(description: "cannot run openssl: \(error)")
        }
        guard result.status == 0 else { throw GenerationError(description: "openssl \(what) failed (\(result.status)): \(result.errorText)") }
    }

    private static func contents(_ path: String) throws(GenerationError) -> Data {
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw GenerationError(description: "cannot read \(path): \(error)")
        }
    }
}
