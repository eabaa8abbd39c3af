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
}
