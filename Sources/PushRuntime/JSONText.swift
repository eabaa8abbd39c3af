/// JSON string quoting (RFC 8259 §7) for text we write by hand: logs, payloads. U+2028 and
/// U+2029 are escaped too, so the output is also safe inside JavaScript.
///
/// Works on UTF-8 bytes, not scalars: a profile of the worker found quoting a 2 KB
/// envelope scalar by scalar through `String` appends at 8% of its CPU. Text without
/// anything to escape (every envelope, most fallback text) is copied in one piece.
public enum JSONText {
    public static func quote(_ text: String) -> String {
        return text.withUTF8InPlace { bytes in
            guard bytes.contains(where: needsEscape) else {
                return String(unsafeUninitializedCapacity: bytes.count + 2) { output in
                    output[0] = UInt8(ascii: "\"")
                    _ = UnsafeMutableBufferPointer(rebasing: output[1...]).initialize(from: bytes)
                    output[bytes.count + 1] = UInt8(ascii: "\"")
                    return bytes.count + 2
                }
            }
            var output: [UInt8] = []
            output.reserveCapacity(bytes.count + 16)
            appendQuoted(bytes, to: &output)
            return String(decoding: output, as: UTF8.self)
        }
    }

    /// Appends `text` quoted, as UTF-8, to `output`: the same bytes as `quote(text).utf8`.
    public static func appendQuoted(_ text: String, to output: inout [UInt8]) {
        text.withUTF8InPlace { appendQuoted($0, to: &output) }
    }

    /// True for a byte that may start something to escape: a quote, a backslash, a control
    /// character, or 0xE2 (the lead byte of U+2028 and U+2029, checked in full below).
    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0xE2
    }

    static func appendQuoted(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var start = 0
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            guard needsEscape(byte) else {
                index += 1
                continue
            }
            let escape: StaticString
            var length = 1
            switch byte {
            case UInt8(ascii: "\""): escape = "\\\""
            case UInt8(ascii: "\\"): escape = "\\\\"
            case UInt8(ascii: "\n"): escape = "\\n"
            case UInt8(ascii: "\r"): escape = "\\r"
            case UInt8(ascii: "\t"): escape = "\\t"
            case 0xE2:
                // U+2028 is E2 80 A8, U+2029 is E2 80 A9; any other E2 sequence stays as is.
                guard index + 2 < count, bytes[index + 1] == 0x80, bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9 else {
                    index += 1
                    continue
                }
                escape = bytes[index + 2] == 0xA8 ? "\\u2028" : "\\u2029"
                length = 3
            default:
                escape = "\\u00"
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            escape.withUTF8Buffer { output.append(contentsOf: $0) }
            if escape.utf8CodeUnitCount == 4 && byte < 0x20 {
                output.append(hexDigit(byte >> 4))
                output.append(hexDigit(byte & 0xF))
            }
            index += length
            start = index
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<count]))
        output.append(UInt8(ascii: "\""))
    }

    @inline(__always)
    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
