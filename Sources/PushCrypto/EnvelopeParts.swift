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
        let kid = KeyIDField(keyID)
        return String(unsafeUninitializedCapacity: capacity(kid: kid)) { buffer in
            write(Self.plainNames, kid: kid, quoted: false, into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// The same JSON as a JSON string value: in quotes, with its quotes (and the key id's
    /// escapes) escaped. The base64 fields need no escaping, so only the fixed field names
    /// and the key id differ from `json`.
    func quotedJSON(keyID: String?) -> QuotedEnvelopeJSON {
        let kid = KeyIDField(keyID)
        let quotedLength = Self.length(of: Self.quotedNames) + base64Length + kid.length(quoted: true)
        let bytes = [UInt8](unsafeUninitializedCapacity: quotedLength) { buffer, count in
            count = write(Self.quotedNames, kid: kid, quoted: true, into: UnsafeMutableRawBufferPointer(buffer))
        }
        // The JSON it encodes is exactly what `json` writes.
        return QuotedEnvelopeJSON(bytes: bytes, textLength: capacity(kid: kid))
    }

    /// The `kid` member as the envelope writes it, as JSON and as that JSON inside a string
    /// value (`quoted`). A key id that needs no escape (every id a device makes) is written
    /// from its own bytes between fixed text, so no string is built for it per envelope; any
    /// other is quoted as JSON, and quoted again without the outer quotes for use inside a
    /// string value.
    enum KeyIDField {
        case absent
        case verbatim(String)
        case escaped(plain: String, quoted: String)

        static let plainOpening: StaticString = ",\"kid\":\"", plainClosing: StaticString = "\""
        static let quotedOpening: StaticString = ",\\\"kid\\\":\\\"", quotedClosing: StaticString = "\\\""

        init(_ keyID: String?) {
            guard let keyID else {
                self = .absent
                return
            }
            if JSONString.needsNoEscape(keyID) {
                self = .verbatim(keyID)
                return
            }
            let member = ",\"kid\":" + JSONString.quote(keyID)
            self = .escaped(plain: member, quoted: String(JSONString.quote(member).dropFirst().dropLast()))
        }

        func length(quoted: Bool) -> Int {
            switch self {
            case .absent: 0
            case .verbatim(let id):
                id.utf8.count + (quoted
                    ? Self.quotedOpening.utf8CodeUnitCount + Self.quotedClosing.utf8CodeUnitCount
                    : Self.plainOpening.utf8CodeUnitCount + Self.plainClosing.utf8CodeUnitCount)
            case .escaped(let plain, let quotedText): (quoted ? quotedText : plain).utf8.count
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
        Self.length(of: Self.plainNames) + base64Length + kid.length(quoted: false)
    }

    private var base64Length: Int {
        Base64.encodedLength(encryptedKey.count) + Base64.encodedLength(cipherText.count)
            + Base64.encodedLength(nonce.count) + Base64.encodedLength(tag.count)
    }

    /// Writes the envelope with `names` around its values; returns the bytes written.
    private func write(_ names: [StaticString], kid: KeyIDField, quoted: Bool, into output: UnsafeMutableRawBufferPointer) -> Int {
        var writer = Writer(output: output)
        writer.append(names[0], base64: encryptedKey)
        writer.append(names[1], base64: cipherText)
        writer.append(names[2], base64: nonce)
        writer.append(names[3], base64: tag)
        writer.append(names[4])
        switch kid {
        case .absent: break
        case .verbatim(var id):
            writer.append(quoted ? KeyIDField.quotedOpening : KeyIDField.plainOpening)
            id.withUTF8 { writer.append(UnsafeRawBufferPointer($0)) }
            writer.append(quoted ? KeyIDField.quotedClosing : KeyIDField.plainClosing)
        case .escaped(let plain, let quotedText):
            var text = quoted ? quotedText : plain
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
