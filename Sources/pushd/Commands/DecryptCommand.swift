import PushCommandLine
import PushCrypto

/// `pushd decrypt`: what a phone does, for tests and debugging.
enum DecryptCommand: Subcommand {
    static let name = "decrypt"
    static let summary = "open an envelope from stdin with a device's private key"
    static let help = """
        usage: pushd decrypt --private-key FILE

        Reads an envelope from standard input (a JSON object, or a JSON string holding one)
        and writes the plaintext to standard output, byte for byte. On any failure it prints
        one line to standard error (malformed envelope, wrong key, authentication failed)
        and exits 1 without writing any plaintext.
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["private-key"])
        let pem = try readTextFile(try parsed.required("private-key"), what: "private key")
        let key: DevicePrivateKey
        do { key = try DevicePrivateKey(pem: pem) } catch { throw .failure(error.description) }
        do {
            let plaintext = try key.open(json: StandardStreams.readAllInput())
            StandardStreams.write(plaintext)
        } catch {
            throw .failure(error.description)
        }
    }
}
