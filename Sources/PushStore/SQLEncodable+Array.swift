import Foundation

/// A type whose values can be elements of an array parameter (`text[]`, `bigint[]`, …),
/// which is how one statement takes a whole batch: `WHERE id = ANY(\(ids))`.
public protocol SQLArrayElement: SQLEncodable {
    static var postgresArrayType: PostgresType { get }
}

extension String: SQLArrayElement { public static var postgresArrayType: PostgresType { .textArray } }
extension Int64: SQLArrayElement { public static var postgresArrayType: PostgresType { .int8Array } }
extension Int: SQLArrayElement { public static var postgresArrayType: PostgresType { .int8Array } }
extension Int32: SQLArrayElement { public static var postgresArrayType: PostgresType { .int4Array } }
extension Int16: SQLArrayElement { public static var postgresArrayType: PostgresType { .int2Array } }
extension Bool: SQLArrayElement { public static var postgresArrayType: PostgresType { .boolArray } }
extension Double: SQLArrayElement { public static var postgresArrayType: PostgresType { .float8Array } }
extension Date: SQLArrayElement { public static var postgresArrayType: PostgresType { .timestamptzArray } }
extension Data: SQLArrayElement { public static var postgresArrayType: PostgresType { .byteaArray } }

extension Optional: SQLArrayElement where Wrapped: SQLArrayElement {
    public static var postgresArrayType: PostgresType { Wrapped.postgresArrayType }
}

extension Array: SQLEncodable where Element: SQLArrayElement {
    public static var postgresType: PostgresType { Element.postgresArrayType }

    /// PostgreSQL's binary array (`array_send`): dimensions, null flag, element type, then
    /// each element as a length (-1 for NULL) and its bytes. One dimension, lower bound 1;
    /// an empty array has no dimensions, as the server writes it.
    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) {
        let hasNull = contains { $0.isSQLNull }
        buffer.appendBigEndian(Int32(isEmpty ? 0 : 1))
        buffer.appendBigEndian(Int32(hasNull ? 1 : 0))
        buffer.appendBigEndian(Element.postgresType.rawValue)
        guard !isEmpty else { return }
        guard count <= Int(Int32.max) else { throw SQLEncodingError("array has too many elements") }
        buffer.appendBigEndian(Int32(count))
        buffer.appendBigEndian(Int32(1))
        for (index, element) in enumerated() {
            if element.isSQLNull {
                buffer.appendBigEndian(Int32(-1))
                continue
            }
            let lengthOffset = buffer.count
            buffer.appendBigEndian(Int32(0))
            do {
                try element.encode(into: &buffer)
            } catch {
                throw SQLEncodingError("array element \(index + 1): \(error.reason)")
            }
            let length = buffer.count - lengthOffset - 4
            guard length <= Int(Int32.max) else { throw SQLEncodingError("array element \(index + 1) is too large") }
            Swift.withUnsafeBytes(of: Int32(length).bigEndian) { bytes in
                for (offset, byte) in bytes.enumerated() { buffer[lengthOffset + offset] = byte }
            }
        }
    }
}
