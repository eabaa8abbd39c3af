import CPostgreSQL

/// The rows of one statement, read in place from libpq's result (binary format).
///
/// The result is immutable and can be handed to any task; rows are decoded on demand with
/// `SQLRow.decode`, so a 2,000-row lookup copies each value once, into its Swift type.
public struct QueryResult: Sendable, RandomAccessCollection {
    /// One result column.
    public struct Column: Sendable, Equatable {
        public let name: String
        public let type: PostgresType
    }

    let storage: ResultStorage
    public let columns: [Column]
    /// The command tag, e.g. `SELECT 3`, `INSERT 0 1`.
    public let commandTag: String
    /// Rows inserted, updated, deleted, selected… as the command tag says; nil if it says none.
    public let rowsAffected: Int?

    init(taking result: OpaquePointer) {
        storage = ResultStorage(result)
        columns = (0..<PQnfields(result)).map { index in
            Column(
                name: PQfname(result, index).map { String(cString: $0) } ?? "?column?",
                type: PostgresType(rawValue: PQftype(result, index)))
        }
        commandTag = PQcmdStatus(result).map { String(cString: $0) } ?? ""
        rowsAffected = PQcmdTuples(result).flatMap { Int(String(cString: $0)) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { Int(PQntuples(storage.pointer)) }

    public subscript(position: Int) -> SQLRow {
        precondition(indices.contains(position), "row \(position) out of range 0..<\(count)")
        return SQLRow(result: self, index: position)
    }

    /// The one row a statement must return (`INSERT … RETURNING`, a function call).
    public func singleRow() throws(StoreError) -> SQLRow {
        guard count == 1 else { throw .unexpectedResult("expected exactly one row, got \(count)") }
        return self[0]
    }
}

/// Owns a `PGresult` and clears it when the last `QueryResult` or `SQLRow` using it goes.
///
/// `@unchecked Sendable` is safe: the `PGresult` is complete and never modified after
/// `PQexecParams` returns it; every libpq function used on it afterwards (`PQgetvalue`,
/// `PQgetlength`, `PQgetisnull`, `PQntuples`, `PQftype`, `PQfname`, `PQfnumber`) only reads,
/// and libpq documents results as independent of their connection. `PQclear` runs in
/// `deinit`, when no other reference can exist.
final class ResultStorage: @unchecked Sendable {  // safe: see the proof above
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        PQclear(pointer)
    }
}
