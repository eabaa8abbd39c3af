import Foundation

/// A Swift type that a result column (binary format) can be read as.
///
/// Decoding checks the column's PostgreSQL type, so reading a `text` column as `Int64`, or a
/// NULL as a non-optional, is a clear `StoreError.decoding` naming the column, not a silent
/// zero or a crash.
public protocol SQLDecodable: Sendable {
    /// `bytes` is `nil` for SQL NULL.
    static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Self
}

/// Why one value could not be decoded; `SQLRow` adds the column and reports `StoreError.decoding`.
public struct SQLDecodingError: Error, Sendable, Equatable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }

    static let unexpectedNull = SQLDecodingError("the value is NULL; decode an Optional to accept NULL")

    static func mismatch(_ type: PostgresType) -> SQLDecodingError {
        SQLDecodingError("a \(type) column cannot be read as this type")
    }
}

extension UnsafeRawBufferPointer {
    /// A big-endian integer of exactly `Value`'s size, or nil if the length is wrong.
    func bigEndian<Value: FixedWidthInteger>(_: Value.Type) -> Value? {
        guard count == MemoryLayout<Value>.size else { return nil }
        return Value(bigEndian: loadUnaligned(as: Value.self))
    }

    /// int2, int4 or int8, widened.
    func integer(type: PostgresType) throws(SQLDecodingError) -> Int64 {
        let value: Int64?
        switch type {
        case .int2: value = bigEndian(Int16.self).map(Int64.init)
        case .int4: value = bigEndian(Int32.self).map(Int64.init)
        case .int8: value = bigEndian(Int64.self)
        default: throw .mismatch(type)
        }
        guard let value else { throw SQLDecodingError("\(count) bytes is not a valid \(type)") }
        return value
    }
}

extension String: SQLDecodable {
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> String {
        guard let bytes else { throw .unexpectedNull }
        if type.isTextual { return String(decoding: bytes, as: UTF8.self) }
        // jsonb's binary form is a version byte (1) and the JSON text.
        if type == .jsonb, bytes.first == 1 { return String(decoding: bytes.dropFirst(), as: UTF8.self) }
        throw .mismatch(type)
    }
}

extension Int64: SQLDecodable {
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Int64 {
        guard let bytes else { throw .unexpectedNull }
        return try bytes.integer(type: type)
    }
}

extension Int: SQLDecodable {
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Int {
        guard let bytes else { throw .unexpectedNull }
        return Int(try bytes.integer(type: type))
    }
}

extension Int32: SQLDecodable {
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Int32 {
        guard let bytes else { throw .unexpectedNull }
        let wide = try bytes.integer(type: type)
        guard let value = Int32(exactly: wide) else { throw SQLDecodingError("\(wide) does not fit in Int32") }
        return value
    }
}

extension Bool: SQLDecodable {
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Bool {
        guard let bytes else { throw .unexpectedNull }
        guard type == .bool else { throw .mismatch(type) }
        guard bytes.count == 1 else { throw SQLDecodingError("boolean of \(bytes.count) bytes") }
        return bytes[0] != 0
    }
}

extension Double: SQLDecodable {
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Double {
        guard let bytes else { throw .unexpectedNull }
        switch type {
        case .float8:
            guard let bits = bytes.bigEndian(UInt64.self) else { throw SQLDecodingError("float8 of \(bytes.count) bytes") }
            return Double(bitPattern: bits)
        case .float4:
            guard let bits = bytes.bigEndian(UInt32.self) else { throw SQLDecodingError("float4 of \(bytes.count) bytes") }
            return Double(Float(bitPattern: bits))
        default:
            throw .mismatch(type)
        }
    }
}

extension Date: SQLDecodable {
    /// `timestamptz` (and `timestamp`, taken as UTC). `infinity` and `-infinity` become
    /// `distantFuture` and `distantPast`.
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Date {
        guard let bytes else { throw .unexpectedNull }
        guard type == .timestamptz || type == .timestamp else { throw .mismatch(type) }
        guard let micros = bytes.bigEndian(Int64.self) else { throw SQLDecodingError("timestamp of \(bytes.count) bytes") }
        if micros == .max { return .distantFuture }
        if micros == .min { return .distantPast }
        return Date(timeIntervalSince1970: PostgresEpoch.unixOffset + Double(micros) / 1_000_000)
    }
}

extension Data: SQLDecodable {
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Data {
        guard let bytes else { throw .unexpectedNull }
        guard type == .bytea else { throw .mismatch(type) }
        return Data(bytes)
    }
}

extension Optional: SQLDecodable where Wrapped: SQLDecodable {
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Wrapped? {
        guard let bytes else { return nil }
        return try Wrapped.decode(bytes, type: type)
    }
}
