@testable import PushCrypto
import Testing

@Suite("Sealing contexts")
struct SealingContextTests {
    /// Begins an envelope, encrypts with the context and opens with the key and nonce
    /// `begin` returned (the context must hold exactly those); returns the whole draw.
    static func sealAndOpen(_ context: SealingContext) throws -> [UInt8] {
        try withDrawBuffer { draw in
            try context.begin(draw: draw)
            let plaintext = Array("a notification".utf8)
            var cipherText = [UInt8](repeating: 0, count: plaintext.count)
            var tag = [UInt8](repeating: 0, count: AESGCM.tagLength)
            try plaintext.withUnsafeBytes { input in
                try cipherText.withUnsafeMutableBytes { output in
                    try tag.withUnsafeMutableBytes { tag in
                        try AESGCM.encrypt(input, cipherText: output, tag: tag, in: context.cipher)
                    }
                }
            }
            let key = UnsafeRawBufferPointer(rebasing: draw[SealingContext.Draw.key])
            let nonce = Array(draw[SealingContext.Draw.nonce])
            #expect(try AESGCM.open(cipherText, key: key, nonce: nonce, tag: tag) == plaintext)
        }
    }

    @Test("with or without a reserve, each envelope gets the key the context holds, never the last one",
          arguments: [true, false])
    func keyedForEachEnvelope(withReserve: Bool) throws {
        let reserve = withReserve ? RandomReserve.make() : nil
        #expect((reserve != nil) == withReserve)
        let context = try SealingContext.make(reserve: reserve)
        var seen = Set<[UInt8]>()
        for _ in 0..<(RandomReserve.drawsPerRefill + 3) {
            seen.insert(try Self.sealAndOpen(context))
            #expect(context.replaceKey())
        }
        #expect(seen.count == RandomReserve.drawsPerRefill + 3)
    }
}
