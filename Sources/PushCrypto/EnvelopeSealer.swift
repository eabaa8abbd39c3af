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
        func region(_ range: Range<Int>) -> UnsafeMutableRawBufferPointer { region(range.lowerBound, range.count) }
        let draw = region(0, drawLength)
        let tag = region(drawLength, tagLength)
        let encodedBlock = region(drawLength + tagLength, blockLength)
        let wrappedKey = region(drawLength + tagLength + blockLength, blockLength)
        let cipherText = region(size - plaintext.count, plaintext.count)
        try context.begin(draw: draw)
        try AESGCM.encrypt(plaintext, cipherText: cipherText, tag: tag, in: context.cipher)
        try recipient.wrap(
            UnsafeRawBufferPointer(region(SealingContext.Draw.key)), seed: UnsafeRawBufferPointer(region(SealingContext.Draw.seed)),
            encoded: encodedBlock, into: wrappedKey)
        sealed = true
        return body(EnvelopeParts(
            encryptedKey: UnsafeRawBufferPointer(wrappedKey), cipherText: UnsafeRawBufferPointer(cipherText),
            nonce: UnsafeRawBufferPointer(region(SealingContext.Draw.nonce)), tag: UnsafeRawBufferPointer(tag)))
    }
}

/// Borrowed views of an envelope's four binary fields, valid only inside the closure that
/// receives them.
struct EnvelopeParts {
    let encryptedKey: UnsafeRawBufferPointer
    let cipherText: UnsafeRawBufferPointer
    let nonce: UnsafeRawBufferPointer
    let tag: UnsafeRawBufferPointer

    /// Compact JSON, fields in the wire order. Written by hand into one buffer: base64
    /// needs no escaping.
    func json(keyID: String?) -> String {
        let kid = KeyIDField(keyID, quoted: false)
        return String(unsafeUninitializedCapacity: capacity(kid: kid)) { buffer in
            write(Self.plainNames, kid: kid, into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// The same JSON as a JSON string value: in quotes, with its quotes (and the key id's
    /// escapes) escaped. The base64 fields need no escaping, so only the fixed field names
    /// and the key id differ from `json`.
    func quotedJSON(keyID: String?) -> QuotedEnvelopeJSON {
        let escapedKid = KeyIDField(keyID, quoted: true)
        let quotedLength = Self.length(of: Self.quotedNames) + base64Length + escapedKid.length
        let bytes = [UInt8](unsafeUninitializedCapacity: quotedLength) { buffer, count in
            count = write(Self.quotedNames, kid: escapedKid, into: UnsafeMutableRawBufferPointer(buffer))
        }
        // The JSON it encodes is exactly what `json` writes.
        return QuotedEnvelopeJSON(bytes: bytes, textLength: capacity(kid: KeyIDField(keyID, quoted: false)))
    }

    /// The `kid` member as the envelope writes it, as JSON or (`quoted`) as that JSON
    /// inside a string value. A key id that needs no escape (every id a device makes) is
    /// written from its own bytes between fixed text, so no string is built for it per
    /// envelope; any other is quoted as JSON (and quoted again, without the outer quotes,
    /// for use inside a string value).
    enum KeyIDField {
        case absent
        case verbatim(opening: StaticString, id: String, closing: StaticString)
        case escaped(String)

        init(_ keyID: String?, quoted: Bool) {
            guard let keyID else {
                self = .absent
                return
            }
            if JSONString.needsNoEscape(keyID) {
                self = quoted
                    ? .verbatim(opening: ",\\\"kid\\\":\\\"", id: keyID, closing: "\\\"")
                    : .verbatim(opening: ",\"kid\":\"", id: keyID, closing: "\"")
                return
            }
            let member = ",\"kid\":" + JSONString.quote(keyID)
            self = .escaped(quoted ? String(JSONString.quote(member).dropFirst().dropLast()) : member)
        }

        var length: Int {
            switch self {
            case .absent: 0
            case .verbatim(let opening, let id, let closing): opening.utf8CodeUnitCount + id.utf8.count + closing.utf8CodeUnitCount
            case .escaped(let text): text.utf8.count
            }
        }
    }

    /// The text around the four base64 values, then the closing: as JSON, and as the same
    /// JSON written inside a JSON string value.
    private static let plainNames: [StaticString] = [
        "{\"encrypted_key\":\"", "\",\"cipher_text\":\"", "\",\"nonce\":\"", "\",\"tag\":\"", "\"", "}",
    ]
    private static let quotedNames: [StaticString] = [
        "\"{\\\"encrypted_key\\\":\\\"", "\\\",\\\"cipher_text\\\":\\\"", "\\\",\\\"nonce\\\":\\\"",
        "\\\",\\\"tag\\\":\\\"", "\\\"", "}\"",
    ]

    private static func length(of names: [StaticString]) -> Int {
        names.reduce(0) { $0 + $1.utf8CodeUnitCount }
    }

    /// The length of `json`'s output: exact, so it also sizes that buffer.
    private func capacity(kid: KeyIDField) -> Int {
        Self.length(of: Self.plainNames) + base64Length + kid.length
    }

    private var base64Length: Int {
        Base64.encodedLength(encryptedKey.count) + Base64.encodedLength(cipherText.count)
            + Base64.encodedLength(nonce.count) + Base64.encodedLength(tag.count)
    }

    /// Writes the envelope with `names` around its values; returns the bytes written.
    private func write(_ names: [StaticString], kid: KeyIDField, into output: UnsafeMutableRawBufferPointer) -> Int {
        var writer = Writer(output: output)
        writer.append(names[0], base64: encryptedKey)
        writer.append(names[1], base64: cipherText)
        writer.append(names[2], base64: nonce)
        writer.append(names[3], base64: tag)
        writer.append(names[4])
        switch kid {
        case .absent: break
        case .verbatim(let opening, var id, let closing):
            writer.append(opening)
            id.withUTF8 { writer.append(UnsafeRawBufferPointer($0)) }
            writer.append(closing)
        case .escaped(var text):
            text.withUTF8 { writer.append(UnsafeRawBufferPointer($0)) }
        }
        writer.append(names[5])
        return writer.cursor
    }

    /// Appends to a buffer sized in advance. A struct with mutating methods rather than
    /// local functions that capture the cursor: the compiler checked each access to such a
    /// captured variable at run time (`swift_beginAccess`), which cost more than the
    /// copying it guarded.
    private struct Writer {
        let output: UnsafeMutableRawBufferPointer
        var cursor = 0

        mutating func append(_ text: UnsafeRawBufferPointer) {
            UnsafeMutableRawBufferPointer(rebasing: output[cursor..<cursor + text.count]).copyMemory(from: text)
            cursor += text.count
        }

        mutating func append(_ text: StaticString) {
            // `withUTF8Buffer`, not `utf8Start`: a one-character literal is stored as a scalar.
            text.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
        }

        mutating func append(_ name: StaticString, base64 bytes: UnsafeRawBufferPointer) {
            append(name)
            cursor += Base64.encode(bytes, into: UnsafeMutableRawBufferPointer(rebasing: output[cursor...]))
        }
    }
}

/// An envelope's JSON as a JSON string value (`"{\"encrypted_key\":…}"`), ready to be
/// spliced into a payload; `textLength` is the length of the JSON it encodes (what payload
/// size limits count).
public struct QuotedEnvelopeJSON: Sendable {
    public let bytes: [UInt8]
    public let textLength: Int
}
