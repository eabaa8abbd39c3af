/// A value in an AMQP field table: message headers and declaration arguments.
///
/// Publishers mostly need `.string` and `.int` (`x-pushd-reason`, retry metadata). The other
/// cases exist because the broker writes them into headers we read back: `x-death` is an
/// array of tables with timestamps, and a header written by another client may be any type.
public enum HeaderValue: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case int(Int64)
    case bool(Bool)
    case double(Double)
    /// A long string that is not valid UTF-8, or an AMQP byte array.
    case bytes([UInt8])
    /// Seconds since the Unix epoch (AMQP timestamps have one-second resolution).
    case timestamp(UInt64)
    case array([HeaderValue])
    case table([String: HeaderValue])
    /// AMQP's "no value".
    case void

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var intValue: Int64? {
        if case .int(let number) = self { return number }
        return nil
    }

    public var arrayValue: [HeaderValue]? {
        if case .array(let values) = self { return values }
        return nil
    }

    public var tableValue: [String: HeaderValue]? {
        if case .table(let table) = self { return table }
        return nil
    }

    public var description: String {
        switch self {
        case .string(let text): return "\"\(text)\""
        case .int(let number): return String(number)
        case .bool(let flag): return String(flag)
        case .double(let number): return String(number)
        case .bytes(let bytes): return "<\(bytes.count) bytes>"
        case .timestamp(let seconds): return "@\(seconds)"
        case .array(let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .table(let table):
            return "{" + table.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .void: return "void"
        }
    }
}

extension HeaderValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
