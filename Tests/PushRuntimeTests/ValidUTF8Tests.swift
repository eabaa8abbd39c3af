import PushRuntime
import Testing

/// `String(validUTF8:)` answers exactly as `String(validating:as:)` does.
@Suite("UTF-8 validation")
struct ValidUTF8Tests {
    private static func both(_ bytes: [UInt8]) -> (fast: String?, standard: String?) {
        (bytes.withUnsafeBufferPointer { String(validUTF8: $0) }, String(validating: bytes, as: UTF8.self))
    }

    @Test("the edges of UTF-8: overlong forms, surrogates, beyond U+10FFFF, truncated and stray bytes, U+FFFD itself")
    func edges() {
        let cases: [[UInt8]] = [
            [], Array("plain ascii".utf8), Array("Grüße, 你好, 🎉".utf8), Array("\u{FFFD}".utf8), [0xEF, 0xBF, 0xBD, 0x41],
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xF0, 0x80, 0x80, 0x80],  // overlong
            [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],  // UTF-16 surrogates
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xFE],  // beyond U+10FFFF, never bytes
            [0xE4, 0xBD], [0xF0, 0x9F, 0x8E], [0x80], [0x41, 0xBF, 0x42],  // truncated, stray continuation
            Array(repeating: 0x78, count: 800) + [0xC3], [0x00], Array("a\u{0}b".utf8),
        ]
        for bytes in cases {
            let (fast, standard) = Self.both(bytes)
            #expect(fast == standard, "\(bytes)")
        }
        #expect(Self.both([0xC0, 0x80]).fast == nil)
        #expect(Self.both(Array("Grüße".utf8)).fast == "Grüße")
    }

    @Test("20,000 random byte strings, mostly pieces of valid UTF-8, agree with the standard check")
    func random() {
        var generator = SystemRandomNumberGenerator()
        let pieces: [[UInt8]] = [
            [0x41], [0x7F], Array("é".utf8), Array("€".utf8), Array("😀".utf8), [0x80], [0xC3], [0xE2, 0x82], [0xF0, 0x9F],
            [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xFF], Array("\u{FFFD}".utf8),
        ]
        var valid = 0
        for _ in 0..<20_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                bytes += Bool.random(using: &generator)
                    ? pieces[Int.random(in: 0..<5, using: &generator)]  // valid ones
                    : pieces.randomElement(using: &generator) ?? []
            }
            let (fast, standard) = Self.both(bytes)
            #expect(fast == standard, "\(bytes)")
            if standard != nil { valid += 1 }
        }
        // Both kinds were met.
        #expect(valid > 1_000 && valid < 19_000, "\(valid) valid")
    }
}
