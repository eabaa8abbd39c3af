import Foundation

/// A JSON value as the phone receives it: an APNs `userInfo`, an FCM data value that holds
/// JSON, a decrypted plaintext. Its own type, so this library depends on no server module.
///
/// Parsing goes through `JSONSerialization` (Foundation's parser: malformed input, however
/// deep or truncated, is a thrown error, never a crash), and booleans are told apart from
/// numbers by their `NSNumber` type (`1 as? Bool` succeeds on Linux, so a cast cannot).
public enum PayloadValue: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([PayloadValue])
    case object([String: PayloadValue])

    /// Parses JSON text; nil for anything that is not JSON.
    public init?(json: some DataProtocol) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json), options: [.fragmentsAllowed]),
              let value = PayloadValue(foundation: object) else { return nil }
        self = value
    }

    /// Converts what `JSONSerialization` returns; nil for anything it never returns.
    init?(foundation object: Any) {
        switch object {
        case let text as String: self = .string(text)
        case let number as NSNumber:
            // A JSON boolean is an `NSNumber` whose type encoding is "c" (char), on Darwin and
            // Linux alike; JSON numbers come as integers ("i", "q") or doubles ("d").
            if String(cString: number.objCType) == "c" {
                self = .bool(number.boolValue)
            } else {
                self = .number(number.doubleValue)
            }
        case let items as [Any]:
            var values: [PayloadValue] = []
            values.reserveCapacity(items.count)
            for item in items {
                guard let value = PayloadValue(foundation: item) else { return nil }
                values.append(value)
            }
            self = .array(values)
        case let fields as [String: Any]:
            var values: [String: PayloadValue] = [:]
            values.reserveCapacity(fields.count)
            for (key, item) in fields {
                guard let value = PayloadValue(foundation: item) else { return nil }
                values[key] = value
            }
            self = .object(values)
        case is NSNull: self = .null
        default: return nil
        }
    }

    public subscript(key: String) -> PayloadValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var objectValue: [String: PayloadValue]? {
        if case .object(let fields) = self { return fields }
        return nil
    }

    /// An integral number that fits an `Int` (a badge, a timestamp); nil otherwise.
    public var integerValue: Int? {
        guard case .number(let number) = self, number.isFinite, number == number.rounded(),
              abs(number) < 9.007_199_254_740_992e15 else { return nil }
        return Int(number)
    }

    /// A number, as APNs's `relevance-score` may be fractional.
    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// An object given either as an object or as a JSON string holding one: both occur in
    /// the field (a Live Activity's `props`, an envelope, Android's `body`).
    public var objectOrEmbeddedObject: [String: PayloadValue]? {
        switch self {
        case .object(let fields): return fields
        case .string(let text): return PayloadValue(json: Data(text.utf8))?.objectValue
        default: return nil
        }
    }

    /// Compact JSON with sorted keys, for printing.
    public var jsonText: String {
        var output = ""
        write(to: &output)
        return output
    }

    private func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .number(let number):
            if let integer = integerValue { output += String(integer) } else { output += number.isFinite ? "\(number)" : "null" }
        case .string(let text): output += Self.quoted(text)
        case .array(let items):
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += "," }
                item.write(to: &output)
            }
            output += "]"
        case .object(let fields):
            output += "{"
            for (index, key) in fields.keys.sorted().enumerated() {
                if index > 0 { output += "," }
                output += Self.quoted(key) + ":"
                fields[key]?.write(to: &output)
            }
            output += "}"
        }
    }

    /// RFC 8259 quoting; a copy of `PushCrypto.JSONString.quote`, which this module cannot
    /// use on Apple platforms (built without PushCrypto there).
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
