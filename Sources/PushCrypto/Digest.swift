import COpenSSL

/// SHA-256, for identifiers derived from producer data (collapse ids), not for secrets.
public enum Digest {
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = EVP_Digest(bytes, bytes.count, &output, &length, EVP_sha256(), nil)
        return output
    }

    public static func sha256Hex(_ text: String) -> String {
        sha256(Array(text.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
