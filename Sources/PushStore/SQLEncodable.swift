import Foundation

/// A Swift value that can be sent as a statement parameter, in PostgreSQL's binary format.
///
/// Binary parameters carry their declared type and never go through text parsing on the
/// server, so there is nothing to escape and nothing a value can do to the statement.
public protocol SQLEncodable: Sendable {
    /// The type the parameter is declared as (`$n` gets this type on the server).
    static var postgresType: PostgresType { get }
    /// True for SQL NULL (only `Optional.none`): nothing is encoded then.
    var isSQLNull: Bool { get }
    /// Appends the value's binary representation.
    func encode(into buffer: inout [UInt8]) throws(SQLEncodingError)
}

extension SQLEncodable {
    public var isSQLNull: Bool { false }
}

/// Why a value could not be encoded.
public struct SQLEncodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

extension String: SQLEncodable {
    public static var postgresType: PostgresType { .text }

    /// PostgreSQL `text` cannot hold U+0000; refusing it here gives a clear error instead of
    /// the server's `invalid byte sequence` and keeps the rest of a batch intact.
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) {
        let bytes = utf8
        if bytes.contains(0) { throw SQLEncodingError("text contains a NUL character, which PostgreSQL text cannot store") }
        buffer.append(contentsOf: bytes)
    }
}

extension Int64: SQLEncodable {
    public static var postgresType: PostgresType { .int8 }
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) { buffer.appendBigEndian(self) }
}

extension Int: SQLEncodable {
    public static var postgresType: PostgresType { .int8 }
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) { buffer.appendBigEndian(Int64(self)) }
}

extension Int32: SQLEncodable {
    public static var postgresType: PostgresType { .int4 }
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) { buffer.appendBigEndian(self) }
}

extension Int16: SQLEncodable {
    public static var postgresType: PostgresType { .int2 }
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) { buffer.appendBigEndian(self) }
}

extension Bool: SQLEncodable {
    public static var postgresType: PostgresType { .bool }
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) { buffer.append(self ? 1 : 0) }
}

extension Double: SQLEncodable {
    public static var postgresType: PostgresType { .float8 }
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) { buffer.appendBigEndian(bitPattern) }
}

extension Date: SQLEncodable {
    public static var postgresType: PostgresType { .timestamptz }

    /// Microseconds since 2000-01-01 UTC, rounded to the nearest microsecond (the column's
    /// precision).
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) {
        let micros = ((timeIntervalSince1970 - PostgresEpoch.unixOffset) * 1_000_000).rounded()
        guard micros.isFinite, micros > Double(Int64.min), micros < Double(Int64.max) else {
            throw SQLEncodingError("date \(self) is outside PostgreSQL's timestamp range")
        }
        buffer.appendBigEndian(Int64(micros))
    }
}

extension Data: SQLEncodable {
    public static var postgresType: PostgresType { .bytea }
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) { buffer.append(contentsOf: self) }
}

extension Optional: SQLEncodable where Wrapped: SQLEncodable {
    public static var postgresType: PostgresType { Wrapped.postgresType }
    public var isSQLNull: Bool { self == nil }

    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) {
        if let value = self { try value.encode(into: &buffer) }
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian<Value: FixedWidthInteger>(_ value: Value) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
