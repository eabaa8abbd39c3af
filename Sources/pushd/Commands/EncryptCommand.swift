import PushCommandLine
import PushCrypto

/// `pushd encrypt`: seal stdin for one device, exactly as the worker does.
enum EncryptCommand: Subcommand {
    static let name = "encrypt"
    static let summary = "seal stdin for one device's public key; print the envelope JSON"
    static let help = """
        usage: pushd encrypt --public-key FILE [--kid KEY_ID]

        Reads the plaintext from standard input and prints the envelope JSON
        {"encrypted_key","cipher_text","nonce","tag"} on one line. FILE holds the device's
        public key as it registered it: base64 PKCS#1 (iOS), base64 SubjectPublicKeyInfo
        (Android) or PEM. --kid adds the key id to the envelope for key rotation.
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["public-key", "kid"])
        let keyText = try readTextFile(try parsed.required("public-key"), what: "public key")
        let key: DevicePublicKey
        do { key = try DevicePublicKey(parsing: keyText) } catch { throw .failure(error.description) }
        let plaintext = StandardStreams.readAllInput()
        do {
            let envelope = try EnvelopeSealer.seal(plaintext, for: key, keyID: parsed["kid"])
            StandardStreams.write(line: envelope.json)
        } catch {
            throw .failure(error.description)
        }
    }
}
