import Foundation
import PushRuntime
import Testing

@Suite("JSON string quoting on bytes")
struct JSONTextTests {
    /// The scalar-by-scalar quoting the byte version replaced: the same output is required.
    static func reference(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20 || c.value == 0x2028 || c.value == 0x2029:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static let samples = [
        "", "plain", "quote \" and backslash \\", "line\nfeed\r\ttab", "\u{0}\u{1}\u{1f}\u{7f}",
        "separators \u{2028} and \u{2029}", "other E2 sequences: \u{2027}\u{202A}€…", "é ü 漢字 🎉",
        "\"", "\\", "\u{2028}", "ends with \u{1}", #"{"encrypted_key":"AAAA+/==","kid":"k-1"}"#,
    ]

    @Test("quote and appendQuoted match the scalar reference")
    func matchesReference() {
        for sample in Self.samples {
            #expect(JSONText.quote(sample) == Self.reference(sample), "\(sample.debugDescription)")
            var bytes: [UInt8] = [0x41]
            JSONText.appendQuoted(sample, to: &bytes)
            #expect(bytes == [0x41] + Array(Self.reference(sample).utf8), "\(sample.debugDescription)")
        }
    }

    @Test("seeded random text, every control character and separator included")
    func randomText() {
        var generator = SeededGenerator(seed: 12)
        let alphabet: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init)
            + ["\u{2028}", "\u{2029}", "\u{2027}", "é", "€", "🎉", "\u{85}", "\u{A0}"]
        for _ in 0..<2_000 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0..<40, using: &generator) {
                text.append(alphabet[Int.random(in: 0..<alphabet.count, using: &generator)])
            }
            let string = String(text)
            #expect(JSONText.quote(string) == Self.reference(string))
            // And it is JSON that decodes back to the text.
            let decoded = try? JSONSerialization.jsonObject(with: Data(JSONText.quote(string).utf8), options: .fragmentsAllowed)
            #expect(decoded as? String == string)
        }
    }
}

/// SplitMix64: the same sequence on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
