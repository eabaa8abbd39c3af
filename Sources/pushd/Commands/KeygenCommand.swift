import Foundation
import PushCommandLine
import PushCrypto

/// `pushd keygen`: what a device does at first launch, for demos, tests and scripts.
enum KeygenCommand: Subcommand {
    static let name = "keygen"
    static let summary = "generate a device RSA key pair; write the private key, print the public key"
    static let help = """
        usage: pushd keygen --out FILE [--format ios|android|pem|pkcs1-pem] [--bits N]

        Generates an RSA key pair as a device would (the server never holds private keys:
        use this for demo devices and tests). The private key is written to FILE as PKCS#8
        PEM, readable by its owner only. The public key is printed in the format asked:
          ios        base64 DER PKCS#1 RSAPublicKey (iOS SecKeyCopyExternalRepresentation)
          android    base64 DER SubjectPublicKeyInfo (Android publicKey.encoded)
          pem        -----BEGIN PUBLIC KEY----- (default)
          pkcs1-pem  -----BEGIN RSA PUBLIC KEY-----
        --bits defaults to 2048 (the minimum accepted).
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["out", "format", "bits"])
        let path = try parsed.required("out")
        let bits = try parsed.integer("bits", default: 2048, minimum: 2048)
        let format = parsed["format"] ?? "pem"
        guard ["ios", "android", "pem", "pkcs1-pem"].contains(format) else {
            throw .usage("--format must be ios, android, pem or pkcs1-pem")
        }
        let privateKey: DevicePrivateKey
        let publicKey: DevicePublicKey
        do {
            privateKey = try DevicePrivateKey.generate(bits: bits)
            publicKey = try privateKey.publicKey
        } catch {
            throw .failure("key generation failed: \(error)")
        }
        guard FileManager.default.createFile(
            atPath: path, contents: Data(privateKey.pkcs8PEM.utf8), attributes: [.posixPermissions: 0o600])
        else { throw .failure("cannot write private key to \(path)") }
        switch format {
        case "ios": StandardStreams.write(line: publicKey.pkcs1Base64)
        case "android": StandardStreams.write(line: publicKey.subjectPublicKeyInfoBase64)
        case "pkcs1-pem": StandardStreams.write(Data(publicKey.pkcs1PEM.utf8))
        default: StandardStreams.write(Data(publicKey.pem.utf8))
        }
    }
}
