import Foundation
import PushCrypto
import Testing

/// `Base64.decodeLenient` normalises on bytes; it must accept and refuse exactly what the
/// earlier normalisation of the text, a Unicode scalar at a time, did.
@Suite("Lenient base64")
struct LenientBase64Tests {
    /// The earlier implementation, kept here as the oracle.
    static func oracle(_ text: String) -> [UInt8]? {
        var normalized = String()
        for character in text.unicodeScalars {
            switch character {
            case " ", "\n", "\r", "\t": continue
            case "-": normalized.append("+")
            case "_": normalized.append("/")
            default: normalized.unicodeScalars.append(character)
            }
        }
        while normalized.utf8.count % 4 != 0 { normalized.append("=") }
        return Data(base64Encoded: normalized).map { [UInt8]($0) }
    }

    @Test("the same verdict and bytes as before on 20,000 seeded inputs, valid and not")
    func sameAsBefore() {
        var generator = SeededGenerator(seed: 0x5EED_BA5E_64)
        let pieces: [String] = ["A", "b", "9", "+", "/", "-", "_", "=", " ", "\n", "\r", "\t", "*", "é", "\u{0}", "==", "AAAA"]
        var accepted = 0
        for round in 0..<20_000 {
            let text: String
            if round % 2 == 0 {
                // Valid encodings of random bytes, then disturbed: wrapped, URL-safe, unpadded.
                let bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                var encoded = Data(bytes).base64EncodedString(options: round % 4 == 0 ? [.lineLength64Characters] : [])
                if round % 6 == 0 { encoded = encoded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
                if round % 10 == 0 { while encoded.hasSuffix("=") { encoded.removeLast() } }
                text = encoded
            } else {
                text = (0..<Int.random(in: 0...24, using: &generator)).map { _ in pieces.randomElement(using: &generator) ?? "" }.joined()
            }
            let new = Base64.decodeLenient(text)
            #expect(new == Self.oracle(text), "\(text.debugDescription)")
            if new != nil { accepted += 1 }
        }
        #expect(accepted > 10_000, "most valid encodings decode: \(accepted)")
    }
}

/// SplitMix64: the same inputs on every run (the generator of PushModelTests,
/// PushRuntimeTests and PushClientTests; these server-free test modules share no support
/// module to hold one).
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
