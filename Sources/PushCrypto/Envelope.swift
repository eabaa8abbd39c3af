import Foundation

/// The end-to-end envelope, as the iOS and Android clients in the field read it:
///
///     {"encrypted_key": b64, "cipher_text": b64, "nonce": b64, "tag": b64, "kid": "…"?}
///
/// `encrypted_key` is the AES-256 content key wrapped with RSA-OAEP-SHA1; `cipher_text` and
/// `tag` are the AES-256-GCM output for the 12-byte `nonce`. `kid` names the device key it
/// was sealed for, so a device that rotated keys can pick the right one; clients that do
/// not know it ignore it.
public struct Envelope: Sendable, Equatable {
    public var encryptedKey: [UInt8]
    public var cipherText: [UInt8]
    public var nonce: [UInt8]
    public var tag: [UInt8]
    public var keyID: String?

    public init(encryptedKey: [UInt8], cipherText: [UInt8], nonce: [UInt8], tag: [UInt8], keyID: String? = nil) {
        self.encryptedKey = encryptedKey
        self.cipherText = cipherText
        self.nonce = nonce
        self.tag = tag
        self.keyID = keyID
    }

    /// Compact JSON, fields in the order above, exactly as `EnvelopeSealer.sealJSON` writes it.
    public var json: String {
        encryptedKey.withUnsafeBytes { encryptedKey in
            cipherText.withUnsafeBytes { cipherText in
                nonce.withUnsafeBytes { nonce in
                    tag.withUnsafeBytes { tag in
                        EnvelopeParts(encryptedKey: encryptedKey, cipherText: cipherText, nonce: nonce, tag: tag)
                            .json(keyID: keyID)
                    }
                }
            }
        }
    }

    /// Reads an envelope from JSON: an object, or a JSON string that holds the object (both
    /// occur in the field, e.g. inside a Live Activity's `props`).
    public init(json: some DataProtocol) throws(EnvelopeOpenError) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(json), options: [.fragmentsAllowed])
        } catch {
            throw .malformedEnvelope("not JSON")
        }
        if let nested = object as? String {
            try self.init(json: Data(nested.utf8), nestedOnce: ())
        } else {
            try self.init(object: object)
        }
    }

    private init(json: Data, nestedOnce: Void) throws(EnvelopeOpenError) {
        guard let object = try? JSONSerialization.jsonObject(with: json) else {
            throw .malformedEnvelope("the JSON string does not hold a JSON object")
        }
        try self.init(object: object)
    }

    /// Reads an envelope from an already decoded JSON value.
    public init(object: Any) throws(EnvelopeOpenError) {
        guard let fields = object as? [String: Any] else {
            throw .malformedEnvelope("not a JSON object")
        }
        func field(_ name: String) throws(EnvelopeOpenError) -> [UInt8] {
            guard let value = fields[name] else { throw .malformedEnvelope("missing field \"\(name)\"") }
            guard let text = value as? String else { throw .malformedEnvelope("field \"\(name)\" is not a string") }
            guard let bytes = Base64.decodeStrict(text) else {
                throw .malformedEnvelope("field \"\(name)\" is not standard base64 with padding")
            }
            return bytes
        }
        encryptedKey = try field("encrypted_key")
        cipherText = try field("cipher_text")
        nonce = try field("nonce")
        tag = try field("tag")
        keyID = fields["kid"] as? String
        guard nonce.count == AESGCM.nonceLength else {
            throw .malformedEnvelope("nonce is \(nonce.count) bytes, must be \(AESGCM.nonceLength)")
        }
        guard tag.count == AESGCM.tagLength else {
            throw .malformedEnvelope("tag is \(tag.count) bytes, must be \(AESGCM.tagLength)")
        }
        guard !encryptedKey.isEmpty else { throw .malformedEnvelope("encrypted_key is empty") }
    }
}

/// JSON string quoting (RFC 8259 §7) for the few strings we write by hand. A copy of
/// `PushRuntime.JSONText` on purpose: PushCrypto depends on OpenSSL only, so a phone-side
/// Swift client can take it alone.
public enum JSONString {
    public static func quote(_ text: String) -> String {
        // Key ids and most other values need no escape: one append, not one per scalar.
        if needsNoEscape(text) { return "\"" + text + "\"" }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(c.value, radix: 16).count) + String(c.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }

    /// True when `quote` would copy every character as it is: no quotation mark, no
    /// backslash, no control character.
    ///
    /// On the contiguous bytes: through the `utf8` view's iterator, a key id cost 700-800
    /// instructions per envelope (callgrind).
    public static func needsNoEscape(_ text: String) -> Bool {
        let plain: (UInt8) -> Bool = { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        return text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(plain) } ?? text.utf8.allSatisfy(plain)
    }
}
