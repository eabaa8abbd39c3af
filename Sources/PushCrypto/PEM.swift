import Foundation

/// Minimal PEM armor: the label between `-----BEGIN x-----` and `-----END x-----` and the
/// base64 body. Used to tell PKCS#1 from SubjectPublicKeyInfo without guessing, and to
/// write keys in the formats devices export.
enum PEM {
    struct Block {
        let label: String
        let der: [UInt8]
    }

    /// Parses the PEM block in `text`; nil if there is none, its body is not base64, or
    /// anything but whitespace follows it (a key text is stored and digested as given, so
    /// trailing text would be kept beside a valid key).
    static func parse(_ text: String) -> Block? {
        guard let begin = text.range(of: "-----BEGIN "),
              let labelEnd = text.range(of: "-----", range: begin.upperBound..<text.endIndex)
        else { return nil }
        let label = String(text[begin.upperBound..<labelEnd.lowerBound])
        guard let end = text.range(of: "-----END \(label)-----", range: labelEnd.upperBound..<text.endIndex) else {
            return nil
        }
        guard text[end.upperBound...].allSatisfy(\.isWhitespace) else { return nil }
        let body = text[labelEnd.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: String(body)) else { return nil }
        return Block(label: label, der: [UInt8](der))
    }

    /// Armors DER with `label`, wrapping base64 at 64 columns as RFC 7468 asks.
    static func armor(_ der: [UInt8], label: String) -> String {
        let body = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
    }
}
