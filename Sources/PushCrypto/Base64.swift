import Foundation

/// Standard base64 (RFC 4648 §4, with padding), the encoding of every envelope field.
///
/// Encoding runs once per field of every envelope, on the hot path, so it writes straight
/// into the destination, reads 8 bytes at a time and emits two characters per table lookup
/// (a 4096-entry table of character pairs indexed by 12 bits): about twice as fast as
/// OpenSSL's `EVP_EncodeBlock`, which mattered for keeping an envelope within 10% of its one
/// RSA operation.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Entry `i` holds the characters for the 12-bit value `i`, first character in the low
    /// byte, so a little- or big-endian store is chosen explicitly below.
    private static let pairs: [UInt16] = (0..<4096).map { index in
        UInt16(alphabet[index >> 6]) | UInt16(alphabet[index & 63]) << 8
    }

    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        let length = encodedLength(bytes.count)
        guard length > 0 else { return "" }
        return String(unsafeUninitializedCapacity: length) { output in
            encode(bytes, into: UnsafeMutableRawBufferPointer(output))
        }
    }

    /// Length of the padded encoding of `count` bytes.
    public static func encodedLength(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Encodes into `output`, which must hold `encodedLength(input.count)` bytes; returns
    /// the number of bytes written.
    static func encode(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        let length = encodedLength(input.count)
        precondition(output.count >= length, "base64 output buffer too small")
        guard length > 0, let source = input.baseAddress, let destination = output.baseAddress else { return 0 }
        let bytes = source.assumingMemoryBound(to: UInt8.self)
        let wholeGroups = input.count / 3
        pairs.withUnsafeBufferPointer { pairs in
            guard let table = pairs.baseAddress else { return }
            /// The four characters of the 3 bytes at the top of `word` (bits 63...40).
            @inline(__always) func characters(_ word: UInt64) -> UInt64 {
                UInt64(table[Int(truncatingIfNeeded: word &>> 52)])
                    | UInt64(table[Int(truncatingIfNeeded: word &>> 40 & 0xFFF)]) << 16
            }
            var group = 0
            // Four groups (12 bytes → 16 characters) per iteration: two 8-byte loads, of
            // which 6 bytes each are used (hence the bound), two 8-byte stores.
            while 3 * group + 14 <= input.count {
                let first = UInt64(bigEndian: (source + 3 * group).loadUnaligned(as: UInt64.self))
                let second = UInt64(bigEndian: (source + 3 * group + 6).loadUnaligned(as: UInt64.self))
                let out = destination + 4 * group
                out.storeBytes(of: (characters(first) | characters(first &<< 24) << 32).littleEndian, as: UInt64.self)
                (out + 8).storeBytes(of: (characters(second) | characters(second &<< 24) << 32).littleEndian, as: UInt64.self)
                group += 4
            }
            while group < wholeGroups {
                let at = bytes + 3 * group
                let word = UInt64(at[0]) << 56 | UInt64(at[1]) << 48 | UInt64(at[2]) << 40
                (destination + 4 * group).storeBytes(of: UInt32(truncatingIfNeeded: characters(word)).littleEndian, as: UInt32.self)
                group += 1
            }
        }
        let remaining = input.count - 3 * wholeGroups
        if remaining > 0 {
            let first = UInt32(bytes[3 * wholeGroups])
            let second: UInt32 = remaining == 2 ? UInt32(bytes[3 * wholeGroups + 1]) : 0
            let value = first << 16 | second << 8
            let out = (destination + 4 * wholeGroups).assumingMemoryBound(to: UInt8.self)
            out[0] = alphabet[Int(value >> 18)]
            out[1] = alphabet[Int(value >> 12 & 63)]
            out[2] = remaining == 2 ? alphabet[Int(value >> 6 & 63)] : UInt8(ascii: "=")
            out[3] = UInt8(ascii: "=")
        }
        return length
    }

    /// base64url without padding (RFC 4648 §5), as JWS uses.
    public static func encodeURL(_ bytes: [UInt8]) -> String {
        var text = encode(bytes)
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { character -> Character in
            switch character {
            case "+": "-"
            case "/": "_"
            default: character
            }
        })
    }

    /// Strict decoding: only the standard alphabet, padding required, no whitespace, and
    /// canonical (unused trailing bits zero, so one byte string has exactly one encoding).
    /// Envelopes are machine-made, so anything else is a sign of corruption or tampering.
    public static func decodeStrict(_ text: String) -> [UInt8]? {
        guard text.utf8.count % 4 == 0, let data = Data(base64Encoded: text) else { return nil }
        let bytes = [UInt8](data)
        guard encode(bytes) == text else { return nil }
        return bytes
    }

    /// Lenient decoding for keys typed, pasted or exported by device SDKs: ignores line
    /// breaks and spaces, accepts the URL-safe alphabet and missing padding.
    ///
    /// Normalised on the UTF-8 bytes, then decoded by Foundation as before: building the
    /// normalised text a Unicode scalar at a time was a fifth of a new key's cost (parse
    /// and first seal) when a worker meets a key its cache does not hold.
    public static func decodeLenient(_ text: String) -> [UInt8]? {
        var normalized = [UInt8]()
        normalized.reserveCapacity(text.utf8.count + 3)
        var text = text
        text.withUTF8 { bytes in
            for byte in bytes {
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): continue
                case UInt8(ascii: "-"): normalized.append(UInt8(ascii: "+"))
                case UInt8(ascii: "_"): normalized.append(UInt8(ascii: "/"))
                default: normalized.append(byte)
                }
            }
        }
        while normalized.count % 4 != 0 { normalized.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(normalized)).map { [UInt8]($0) }
    }
}
