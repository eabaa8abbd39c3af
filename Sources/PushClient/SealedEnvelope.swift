/// The end-to-end envelope as the phone reads it (README, "The envelope"):
///
///     {"encrypted_key": b64, "cipher_text": b64, "nonce": b64, "tag": b64, "kid": "…"?}
///
/// Parsed here, not by a crypto backend, so that every backend (OpenSSL, Apple's Security
/// and CryptoKit) sees the same checked parts and malformed input never reaches a cipher.
/// It mirrors `PushCrypto.Envelope` on purpose: on Apple platforms this module is built
/// without PushCrypto (no OpenSSL), so it cannot borrow that type.
public struct SealedEnvelope: Sendable, Equatable {
    public static let nonceLength = 12
    public static let tagLength = 16

    public var encryptedKey: [UInt8]
    public var cipherText: [UInt8]
    public var nonce: [UInt8]
    public var tag: [UInt8]
    /// The device key it was sealed for, when the server knows it: picks the key after a
    /// rotation, while the phone still holds the previous one.
    public var keyID: String?

    public init(encryptedKey: [UInt8], cipherText: [UInt8], nonce: [UInt8], tag: [UInt8], keyID: String? = nil) {
        self.encryptedKey = encryptedKey
        self.cipherText = cipherText
        self.nonce = nonce
        self.tag = tag
        self.keyID = keyID
    }

    /// Reads the envelope from the value found in a payload: an object, or a JSON string
    /// holding the object (APNs `encrypted_data`, FCM data values, Live Activity props).
    public init(value: PayloadValue) throws(FallbackReason) {
        guard let fields = value.objectOrEmbeddedObject else {
            throw .malformedEnvelope("not a JSON object nor a string holding one")
        }
        func field(_ name: String) throws(FallbackReason) -> [UInt8] {
            guard let value = fields[name] else { throw .malformedEnvelope("missing field \"\(name)\"") }
            guard let text = value.stringValue else { throw .malformedEnvelope("field \"\(name)\" is not a string") }
            guard let bytes = StrictBase64.decode(text) else {
                throw .malformedEnvelope("field \"\(name)\" is not canonical standard base64 with padding")
            }
            return bytes
        }
        encryptedKey = try field("encrypted_key")
        cipherText = try field("cipher_text")
        nonce = try field("nonce")
        tag = try field("tag")
        switch fields["kid"] {
        case nil, .null?: keyID = nil
        case .string(let kid)?: keyID = kid
        default: throw .malformedEnvelope("field \"kid\" is not a string")
        }
        guard nonce.count == Self.nonceLength else {
            throw .malformedEnvelope("nonce is \(nonce.count) bytes, must be \(Self.nonceLength)")
        }
        guard tag.count == Self.tagLength else {
            throw .malformedEnvelope("tag is \(tag.count) bytes, must be \(Self.tagLength)")
        }
        guard !encryptedKey.isEmpty else { throw .malformedEnvelope("encrypted_key is empty") }
    }
}
