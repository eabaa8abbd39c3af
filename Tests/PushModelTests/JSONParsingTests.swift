import Foundation
import PushModel
import Testing

/// `JSONValue.parse` against `JSONDecoder` decoding `JSONValue` (what jobs were read with
/// before): the same value for every text one accepts, and a refusal for every text one
/// refuses.
@Suite("JSON parsing")
struct JSONParsingTests {
    static func foundation(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    static func parsed(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONValue.parse(bytes)
    }

    static let corpus: [String] = [
        #"{}"#, #"[]"#, #""x""#, "1", "-0", "0.5", "1e3", "1E-3", "-1.25e+2", "true", "false", "null",
        #" { "a" : [ 1 , 2 , { "b" : null } ] } "#, "\t\n\r {\"a\":1}\n",
        #"{"a":1,"a":2}"#, #"{"a":{"x":1},"a":[2]}"#,
        #""\u00e9\u20ac\ud83c\udf89""#, #""\"\\\/\b\f\n\r\t""#, #""\u0000""#, "\"é🎉\"",
        #"12345678901234567890"#, "1e308", "1e309", "-1e400", "5e-324", "1e-400",
        // Refused by both.
        "", " ", "{", "}", "[1,]", "[,1]", #"{"a":1,}"#, #"{"a" 1}"#, #"{a:1}"#, #"{'a':1}"#, "01", "-", "1.", ".5", "+1",
        "1e", "1e+", "NaN", "Infinity", "tru", "nul", "[1 2]", #""abc"#, "\"a\u{1}b\"", #""\x""#, #""\u12""#, #""\u12G4""#,
        #""\ud83c""#, #""\udf89""#, #""\ud83c\u0041""#, #"{"a":1} x"#, "[1]]", "\u{feff}{}",
    ]

    @Test("the corpus: the same value, or a refusal, as JSONDecoder")
    func corpusAgrees() {
        for text in Self.corpus {
            let bytes = Array(text.utf8)
            #expect(Self.parsed(bytes) == Self.foundation(bytes), "\(text.debugDescription)")
        }
    }

    @Test("invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x5B, 0x80, 0x5D]] {
            #expect(Self.parsed(bytes) == nil)
            #expect(Self.parsed(bytes) == Self.foundation(bytes), "\(bytes)")
        }
    }

    /// Strings are skimmed eight bytes at a time up to the first quote, backslash or control
    /// character: each of those, and a multi-byte character, at every offset of the first
    /// words, read as `JSONDecoder` reads them.
    @Test("a quote, an escape, a control character or a non-ASCII character at every offset of a string")
    func specialBytesAtEveryOffset() {
        let specials = [#"\""#, #"\\"#, #"\n"#, #"\u0041"#, "é", "🎉", "\u{1}", "\u{1F}", " ", "\u{7F}", "~", "\""]
        for offset in 0..<20 {
            for special in specials {
                let text = "\"" + String(repeating: "a", count: offset) + special + String(repeating: "b", count: 19 - offset) + "\""
                let bytes = Array(text.utf8)
                #expect(Self.parsed(bytes) == Self.foundation(bytes), "\(text.debugDescription)")
                let unterminated = Array(bytes.dropLast())
                #expect(Self.parsed(unterminated) == Self.foundation(unterminated), "\(text.debugDescription) without its closing quote")
            }
        }
    }

    @Test("nesting: 512 levels are read, 513 are refused, like JSONDecoder")
    func depth() {
        for levels in [511, 512, 513, 2000] {
            let bytes = Array((String(repeating: "[", count: levels) + String(repeating: "]", count: levels)).utf8)
            #expect((Self.parsed(bytes) == nil) == (Self.foundation(bytes) == nil), "\(levels) levels")
        }
        let deep = Array((String(repeating: "[", count: 100_000)).utf8)
        #expect(Self.parsed(deep) == nil)
    }

    @Test("3,000 random mutations of a job: accepted and read alike, or refused by both")
    func mutations() throws {
        let job = try String(
            contentsOf: LiveActivityDecodingTests.examples.appendingPathComponent("job.all-options.json"), encoding: .utf8)
        let original = Array(job.utf8)
        #expect(Self.parsed(original) != nil && Self.parsed(original) == Self.foundation(original))
        var generator = SeededGenerator(seed: 20261201)
        let alphabet = Array(#"{}[]":,\-+.0123456789eE truefalsn"#.utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xFF]
        var disagreements: [String] = []
        for _ in 0..<3000 {
            var bytes = original
            for _ in 0..<Int(generator.next() % 3 + 1) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: position)
                default: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                }
            }
            if Self.parsed(bytes) != Self.foundation(bytes) {
                disagreements.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, first: \(disagreements.first ?? "")")
    }
}

/// SplitMix64, so a failing mutation can be reproduced (the same generator as
/// PushRuntimeTests' and PushClientTests'; test modules cannot share one without pulling
/// the C-backed `PushTestSupport` into these server-free tests).
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
