import CPostgreSQL
import PushRuntime

/// One row of a `QueryResult`.
public struct SQLRow: Sendable {
    let result: QueryResult
    public let index: Int

    /// The value of column `column` (0-based) as `Value`.
    public func decode<Value: SQLDecodable>(_ type: Value.Type, column: Int) throws(StoreError) -> Value {
        guard result.columns.indices.contains(column) else {
            throw .unexpectedResult("column \(column) does not exist; the result has \(result.columns.count) columns")
        }
        let pointer = result.storage.pointer
        let row = Int32(index), field = Int32(column)
        let columnType = result.columns[column].type
        do {
            if PQgetisnull(pointer, row, field) == 1 {
                return try Value.decode(nil, type: columnType)
            }
            let length = Int(PQgetlength(pointer, row, field))
            let bytes = UnsafeRawBufferPointer(start: PQgetvalue(pointer, row, field), count: length)
            return try Value.decode(bytes, type: columnType)
        } catch {
            throw .decoding(DecodingFailure(
                column: column, columnName: result.columns[column].name, postgresType: columnType,
                swiftType: String(describing: Value.self), reason: error.reason))
        }
    }

    /// Calls `body` with the bytes of column `column` where libpq holds them (nil for NULL):
    /// for a value that is only looked up, not kept.
    public func withBytes<Result>(column: Int, _ body: (UnsafeRawBufferPointer?) -> Result) throws(StoreError) -> Result {
        guard result.columns.indices.contains(column) else {
            throw .unexpectedResult("column \(column) does not exist; the result has \(result.columns.count) columns")
        }
        let pointer = result.storage.pointer
        let row = Int32(index), field = Int32(column)
        if PQgetisnull(pointer, row, field) == 1 { return body(nil) }
        return body(UnsafeRawBufferPointer(start: PQgetvalue(pointer, row, field), count: Int(PQgetlength(pointer, row, field))))
    }

    /// A text column's value, as `first` or `second` itself when its bytes are theirs.
    ///
    /// A few values repeat down a device lookup's rows: every device of a job carries one of
    /// the job's two app ids, and a recipient's devices come one after another. A string
    /// made for each row costs an allocation and a UTF-8 check on the pool thread, then a
    /// free when the job is done, once per delivery. Any other value (and NULL, or a column
    /// that is not text) is decoded as `decode(String.self, column:)` decodes it.
    public func decodeText(column: Int, reusing first: String?, _ second: String? = nil) throws(StoreError) -> String {
        let reused = try withBytes(column: column) { bytes -> String? in
            guard let bytes, result.columns[column].type.isTextual else { return nil }
            if let first, first.hasUTF8(bytes) { return first }
            if let second, second.hasUTF8(bytes) { return second }
            return nil
        }
        if let reused { return reused }
        return try decode(String.self, column: column)
    }

    /// The value of the column named `name` as `Value`.
    public func decode<Value: SQLDecodable>(_ type: Value.Type, column name: String) throws(StoreError) -> Value {
        guard let column = result.columns.firstIndex(where: { $0.name == name }) else {
            throw .unexpectedResult("no column named \"\(name)\" (columns: \(result.columns.map(\.name).joined(separator: ", ")))")
        }
        return try decode(type, column: column)
    }

    /// All columns at once, in order: `let (id, name) = try row.decode((Int64, String).self)`.
    /// The row must have exactly as many columns as types are given.
    public func decode<each Value: SQLDecodable>(_ types: (repeat each Value).Type) throws(StoreError) -> (repeat each Value) {
        var expected = 0
        for _ in repeat (each Value).self { expected += 1 }
        try requireColumnCount(expected)
        var column = 0
        func next<Next: SQLDecodable>(_ type: Next.Type) throws(StoreError) -> Next {
            defer { column += 1 }
            return try decode(type, column: column)
        }
        return (repeat try next((each Value).self))
    }

    /// Throws unless the row has exactly `count` columns, as `decode((...).self)` checks; for
    /// a hot path that decodes column by column (`Device.init(row:)` says why).
    public func requireColumnCount(_ count: Int) throws(StoreError) {
        guard count == result.columns.count else {
            throw .unexpectedResult("decoding \(count) columns from a row of \(result.columns.count)")
        }
    }
}
