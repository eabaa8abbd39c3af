import PushRuntime

/// A strict RFC 8259 parser straight from bytes to `JSONValue`, for job messages.
///
/// Why not `JSONDecoder` with `JSONValue`'s `Decodable`: that finds each value's type by
/// trying Bool, Double, String and array in turn, and every failed try builds a
/// `DecodingError` with its coding path and description. Profiled on a worker, decoding
/// one 100-device job that way cost about 4% of all its CPU. This reads each byte once.
///
/// It reads what `JSONDecoder` reads, the same way (the differential tests hold it to that,
/// since jobs were read with it before): any value at the top, a UTF-8 byte order mark
/// skipped, a trailing comma in an object or array allowed, the first of duplicate keys
/// kept, numbers as `Double` (refused when they overflow, or underflow to zero), strings
/// as valid UTF-8 with `\u` escapes in surrogate pairs, at most 512 levels of nesting.
/// `JobDocument` still hands what this refuses to `JSONDecoder`, so no text it read
/// before is refused now.
extension JSONValue {
    /// Why a text is not JSON: the byte offset and what was wrong there.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    public static func parse(_ bytes: some Collection<UInt8>) throws(ParseError) -> JSONValue {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer -> Result<JSONValue, ParseError> in
            var parser = Parser(buffer)
            do throws(ParseError) { return .success(try parser.document()) } catch { return .failure(error) }
        }
        if let contiguous { return try contiguous.get() }
        return try parse(Array(bytes))
    }

    private struct Parser {
        static let maximumDepth = 512

        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var depth = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func document() throws(ParseError) -> JSONValue {
            if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
            skipWhitespace()
            let value = try self.value()
            skipWhitespace()
            guard index == bytes.count else { throw failure("unexpected text after the value") }
            return value
        }

        private func failure(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

        private mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        private mutating func value() throws(ParseError) -> JSONValue {
            guard index < bytes.count else { throw failure("unexpected end of text") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw failure("unexpected character")
            }
        }

        private mutating func literal(_ word: StaticString) throws(ParseError) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count,
                  UnsafeBufferPointer(rebasing: bytes[index..<index + count]).elementsEqual(
                    UnsafeBufferPointer(start: word.utf8Start, count: count))
            else { throw failure("unexpected character") }
            index += count
        }

        private mutating func enter() throws(ParseError) {
            depth += 1
            guard depth <= Self.maximumDepth else { throw failure("nested more than \(Self.maximumDepth) levels") }
        }

        private mutating func object() throws(ParseError) -> JSONValue {
            var fields: [String: JSONValue] = [:]
            try elements(closing: UInt8(ascii: "}")) { (parser) throws(ParseError) in
                guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "\"") else {
                    throw parser.failure("expected a key")
                }
                let key = try parser.string()
                parser.skipWhitespace()
                guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: ":") else {
                    throw parser.failure("expected ':'")
                }
                parser.index += 1
                parser.skipWhitespace()
                let value = try parser.value()
                if fields[key] == nil { fields[key] = value }
            }
            return .object(fields)
        }

        private mutating func array() throws(ParseError) -> JSONValue {
            var items: [JSONValue] = []
            try elements(closing: UInt8(ascii: "]")) { (parser) throws(ParseError) in items.append(try parser.value()) }
            return .array(items)
        }

        /// An object's members or an array's items, from the opening bracket to `closing`:
        /// `element` reads one at a time, between commas; a comma before `closing` is allowed.
        private mutating func elements(
            closing: UInt8, _ element: (inout Parser) throws(ParseError) -> Void
        ) throws(ParseError) {
            try enter()
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == closing {
                index += 1
                depth -= 1
                return
            }
            while true {
                skipWhitespace()
                try element(&self)
                skipWhitespace()
                guard index < bytes.count else { throw failure("unexpected end of text") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == closing else { continue }
                }
                guard bytes[index] == closing else { throw failure("expected ',' or '\(Character(Unicode.Scalar(closing)))'") }
                index += 1
                depth -= 1
                return
            }
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, read as a `Double`.
        private mutating func number() throws(ParseError) -> Double {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            func digits(_ parser: inout Parser) -> Int {
                let first = parser.index
                while parser.index < parser.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index]) {
                    parser.index += 1
                }
                return parser.index - first
            }
            let integerStart = index
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw failure("a number needs digits") }
            if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") {
                throw ParseError(offset: integerStart, reason: "a number may not start with 0")
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw failure("a fraction needs digits") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw failure("an exponent needs digits") }
            }
            let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
            guard let number = Double(String(decoding: text, as: UTF8.self)), number.isFinite else {
                throw ParseError(offset: start, reason: "number out of range")
            }
            // Underflow to zero is refused too: only a number written with zero digits is 0.
            if number == 0 {
                let mantissa = text.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
                if mantissa.contains(where: { (UInt8(ascii: "1")...UInt8(ascii: "9")).contains($0) }) {
                    throw ParseError(offset: start, reason: "number out of range")
                }
            }
            return number
        }

        /// A string from its opening quote; escapes resolved, UTF-8 checked.
        private mutating func string() throws(ParseError) -> String {
            index += 1
            let start = index
            skipPlainStringBytes()
            // The common case: no escapes, one validated copy of the run.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    guard let text = String(validUTF8: run) else {
                        throw ParseError(offset: start, reason: "a string is not valid UTF-8")
                    }
                    index += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") { break }
                guard byte >= 0x20 else { throw failure("a control character in a string") }
                index += 1
            }
            var decoded = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = decoded.withUnsafeBufferPointer({ String(validUTF8: $0) }) else {
                        throw ParseError(offset: start, reason: "a string is not valid UTF-8")
                    }
                    index += 1
                    return text
                case UInt8(ascii: "\\"):
                    index += 1
                    try escape(into: &decoded)
                case 0..<0x20:
                    throw failure("a control character in a string")
                default:
                    decoded.append(byte)
                    index += 1
                }
            }
            throw failure("unterminated string")
        }

        /// Moves `index` past the string bytes that need no look (not a quote, a backslash
        /// or a control character), eight at a time: a job's text is mostly such bytes
        /// (recipient ids, the content), and the byte loop spent some ten instructions on each.
        ///
        /// Each test is the "has a zero byte" word trick on `word` changed so that a zero
        /// byte marks a hit; only the lowest hit counts (a borrow can mark a byte above a hit,
        /// never below one), and bytes from 0x80 up never count as control characters.
        private mutating func skipPlainStringBytes() {
            guard let base = bytes.baseAddress else { return }
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= bytes.count {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                let quote = word ^ 0x2222_2222_2222_2222
                let backslash = word ^ 0x5C5C_5C5C_5C5C_5C5C
                let hits = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (word &- 0x2020_2020_2020_2020) & ~word) & highs
                if hits != 0 {
                    index += hits.trailingZeroBitCount / 8
                    return
                }
                index += 8
            }
        }

        /// One escape after its backslash.
        private mutating func escape(into decoded: inout [UInt8]) throws(ParseError) {
            guard index < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(byte)
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hexQuad()
                if (0xD800...0xDBFF).contains(scalar) {
                    // A high surrogate must be followed by an escaped low one.
                    guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    else { throw failure("an unpaired surrogate") }
                    index += 2
                    let low = try hexQuad()
                    guard (0xDC00...0xDFFF).contains(low) else { throw failure("an unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw failure("an unpaired surrogate")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw failure("an invalid \\u escape") }
                decoded.append(contentsOf: unicode.utf8)
            default:
                throw failure("an invalid escape")
            }
        }

        private mutating func hexQuad() throws(ParseError) -> UInt32 {
            guard bytes.count - index >= 4 else { throw failure("an invalid \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw failure("an invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
    }
}
