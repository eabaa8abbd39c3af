/// The DER of an RSA `SubjectPublicKeyInfo` (RFC 5280 §4.1, RFC 3279 §2.3.1), read only as
/// far as needed to find the PKCS#1 `RSAPublicKey` it wraps:
///
///     SEQUENCE { SEQUENCE { OID 1.2.840.113549.1.1.1, NULL }, BIT STRING { 0 unused bits, RSAPublicKey } }
///
/// Strict on purpose: definite lengths in their shortest form, nothing after the outer
/// sequence, exactly that algorithm identifier. A key in any other shape is not rejected
/// here, only left to OpenSSL's general decoder.
enum SubjectPublicKeyInfo {
    /// `SEQUENCE { OID rsaEncryption, NULL }`.
    private static let rsaEncryption: [UInt8] = [0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00]

    /// The `RSAPublicKey` bytes inside `der`, or nil when `der` is not exactly that shape.
    static func rsaPublicKey(in der: [UInt8]) -> ArraySlice<UInt8>? {
        guard let outer = element(in: der[...], tag: 0x30), outer.rest.isEmpty else { return nil }
        let body = outer.content
        guard body.starts(with: rsaEncryption) else { return nil }
        guard let bits = element(in: body.dropFirst(rsaEncryption.count), tag: 0x03), bits.rest.isEmpty,
              bits.content.first == 0x00
        else { return nil }
        return bits.content.dropFirst()
    }

    /// The first DER element of `bytes` if it has `tag`: its content and what follows it.
    private static func element(in bytes: ArraySlice<UInt8>, tag: UInt8) -> (content: ArraySlice<UInt8>, rest: ArraySlice<UInt8>)? {
        var index = bytes.startIndex
        guard index < bytes.endIndex, bytes[index] == tag else { return nil }
        index += 1
        guard index < bytes.endIndex else { return nil }
        let first = bytes[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7f)
            // One or two length bytes (keys up to 64 KiB), shortest form only.
            guard count == 1 || count == 2, bytes.endIndex - index >= count else { return nil }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
            guard length >= 0x80, count == 1 || length > 0xff else { return nil }
        }
        guard bytes.endIndex - index >= length else { return nil }
        return (bytes[index..<(index + length)], bytes[(index + length)...])
    }
}
