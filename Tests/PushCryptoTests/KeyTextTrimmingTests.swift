@testable import PushCrypto
import Testing

/// A key text is trimmed on its bytes when only ASCII borders what is kept; it must keep
/// exactly what the Character walk from both ends keeps (`trimmingWhitespaceByCharacter`, the
/// earlier code, here as the oracle), including where a Character spans the border.
@Suite("Key text trimming")
struct KeyTextTrimmingTests {
    /// Pieces that make the byte walk and the Character walk differ if the border is wrong:
    /// ASCII whitespace and CR LF, Unicode whitespace (NEL, no-break space, line separator,
    /// ideographic space), a combining acute accent (a space with it is one whitespace
    /// Character), an Arabic number sign (Prepend: it joins the space after it), emoji
    /// with a ZWJ, ASCII controls that are not whitespace (NUL, the separators 0x1C-0x1F,
    /// DEL), and base64 characters.
    static let pieces = [
        " ", "\t", "\n", "\r", "\r\n", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{2028}", "\u{3000}", "\u{301}", "\u{600}",
        "\u{0}", "\u{1C}", "\u{1F}", "\u{7F}",
        "\u{1F469}\u{200D}\u{1F4BB}", "M", "I", "=", "+", "/", "AAAA", "é",
    ]

    @Test("the same bytes as the Character walk on 20,000 seeded texts")
    func sameAsCharacterWalk() {
        var generator = SeededGenerator(seed: 0x7219_5EED)
        var changed = 0
        for _ in 0..<20_000 {
            let text = (0..<Int.random(in: 0...10, using: &generator))
                .map { _ in Self.pieces.randomElement(using: &generator) ?? "" }.joined()
            let trimmed = text.trimmingWhitespace()
            // Bytes, not String ==: that compares canonical equivalence.
            #expect(Array(trimmed.utf8) == Array(text.trimmingWhitespaceByCharacter().utf8), "\(text.debugDescription)")
            if trimmed.utf8.count != text.utf8.count { changed += 1 }
        }
        #expect(changed > 5_000, "most texts have something to trim: \(changed)")
    }

    @Test("the borders where a Character spans them", arguments: [
        (" \u{301}MIIB", "MIIB"),  // one whitespace Character: a space with a combining mark
        ("MIIB\u{600} ", "MIIB\u{600} "),  // the space joins the Prepend before it: kept
        ("\r\nMIIB\r\n", "MIIB"),
        ("\u{A0}MIIB\u{3000}", "MIIB"),
        ("MIIB", "MIIB"),
        (" \n\t", ""),
        ("", ""),
    ])
    func borders(text: String, expected: String) {
        #expect(Array(text.trimmingWhitespace().utf8) == Array(expected.utf8))
    }
}
