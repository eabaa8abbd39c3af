import COpenSSL
import Foundation

/// Seals plaintext for one device: a fresh random AES-256 key, 12-byte nonce and OAEP seed
/// from OpenSSL's CSPRNG for every call (through a pooled `SealingContext`), AES-256-GCM for
/// the content, RSA-OAEP-SHA1 to wrap the key. Stateless, so any number of tasks may seal at once.
///
/// `sealJSON` is the hot path (the worker embeds the JSON in a push payload): it encrypts
/// into scratch memory and base64-encodes straight into the result, one allocation in all.
public enum EnvelopeSealer {
    /// Seals `plaintext` and returns the envelope JSON, with `kid` when `keyID` is given.
    public static func sealJSON(
        _ plaintext: some ContiguousBytes, for recipient: DevicePublicKey, keyID: String? = nil
    ) throws(SealError) -> String {
        try withBytes(plaintext) { (bytes) throws(SealError) in
            try sealParts(bytes, for: recipient) { parts in parts.json(keyID: keyID) }
        }
    }

    /// `sealJSON` for an array: a concrete overload, so the hot path is specialised rather
    /// than going through `ContiguousBytes`'s witness table.
    public static func sealJSON(
        _ plaintext: [UInt8], for recipient: DevicePublicKey, keyID: String? = nil
    ) throws(SealError) -> String {
        try withBytes(plaintext) { (bytes) throws(SealError) in
            try sealParts(bytes, for: recipient) { parts in parts.json(keyID: keyID) }
        }
    }

    /// Seals `plaintext` and returns the envelope JSON already written as a JSON string
    /// value (quotes included, its own quotes escaped): what a push payload embeds as
    /// `encrypted_data`, without making a `String` of it (which validates every byte) or
    /// scanning it again to escape it.
    public static func sealQuotedJSON(
        _ plaintext: [UInt8], for recipient: DevicePublicKey, keyID: String? = nil
    ) throws(SealError) -> QuotedEnvelopeJSON {
        try withBytes(plaintext) { (bytes) throws(SealError) in
            try sealParts(bytes, for: recipient) { parts in parts.quotedJSON(keyID: keyID) }
        }
    }

    /// Seals `plaintext` and returns the envelope's parts.
    public static func seal(
        _ plaintext: some ContiguousBytes, for recipient: DevicePublicKey, keyID: String? = nil
    ) throws(SealError) -> Envelope {
        try withBytes(plaintext) { (bytes) throws(SealError) in
            try sealParts(bytes, for: recipient) { parts in
                Envelope(
                    encryptedKey: Array(parts.encryptedKey), cipherText: Array(parts.cipherText),
                    nonce: Array(parts.nonce), tag: Array(parts.tag), keyID: keyID)
            }
        }
    }

    /// Seals into one scratch buffer (the context's own, see `SealingContext.scratch`) laid out as
    /// draw (key ‖ nonce ‖ OAEP seed) ‖ tag ‖ padded block ‖ wrapped key ‖ ciphertext, hands
    /// the parts to `body`, then wipes what is secret: the AES key, the seed and the padded
    /// block (which the wrap wipes itself) never outlive this call.
    private static func sealParts<Result>(
        _ plaintext: UnsafeRawBufferPointer, for recipient: DevicePublicKey,
        _ body: (EnvelopeParts) -> Result
    ) throws(SealError) -> Result {
        let drawLength = RandomReserve.drawLength, tagLength = AESGCM.tagLength
        let blockLength = recipient.modulusBytes
        let size = drawLength + tagLength + 2 * blockLength + plaintext.count
        let context = try SealingContext.pool.take()
        var sealed = false
        // Declared first, so it runs last: the scratch is wiped before another thread can
        // take the context.
        defer { SealingContext.pool.giveBack(context, reusable: sealed) }
        let scratch = context.scratch(byteCount: size)
        defer {
            OPENSSL_cleanse(scratch.baseAddress, drawLength)
            context.endScratch(scratch)
        }
        func region(_ offset: Int, _ length: Int) -> UnsafeMutableRawBufferPointer {
            UnsafeMutableRawBufferPointer(rebasing: scratch[offset..<offset + length])
        }
        let draw = region(0, drawLength)
        let tag = region(drawLength, tagLength)
        let encodedBlock = region(drawLength + tagLength, blockLength)
        let wrappedKey = region(drawLength + tagLength + blockLength, blockLength)
        let cipherText = region(size - plaintext.count, plaintext.count)
        try context.begin(draw: draw)
        try AESGCM.encrypt(plaintext, cipherText: cipherText, tag: tag, in: context.cipher)
        func part(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: draw[range]) }
        try recipient.wrap(part(SealingContext.Draw.key), seed: part(SealingContext.Draw.seed), encoded: encodedBlock, into: wrappedKey)
        sealed = true
        return body(EnvelopeParts(
            encryptedKey: UnsafeRawBufferPointer(wrappedKey), cipherText: UnsafeRawBufferPointer(cipherText),
            nonce: part(SealingContext.Draw.nonce), tag: UnsafeRawBufferPointer(tag)))
    }
}
