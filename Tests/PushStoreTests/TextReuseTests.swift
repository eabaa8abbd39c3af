import PushRuntime
import PushStore
import Testing

/// `SQLRow.decodeText`: a text column that repeats a value the caller holds comes back as
/// that very string; anything else decodes as `decode(String.self, column:)` does.
@Suite("Text columns reusing a string held")
struct TextReuseTests {
    private func row() async throws -> (SQLRow, ConnectionPool) {
        var configuration = try TestDatabase.serverConfiguration()
        configuration.applicationName = TestDatabase.uniqueName("pushd_test_reuse")
        let pool = ConnectionPool(configuration: configuration)
        let row = try await pool.query("""
            SELECT \("com.example.bench.application"), \("another.application.id.here"), \(String?.none), \(Int32(42)),
                   \("com.example.bench.applicatioN"), \(""), '"x"'::jsonb
            """).singleRow()
        return (row, pool)
    }

    /// Where a string's UTF-8 lies: the same storage for the same string object (the
    /// strings here are longer than the 15 bytes a string holds inline).
    private func storage(_ text: String) -> UnsafePointer<UInt8>? {
        text.withUTF8InPlace { $0.baseAddress }
    }

    @Test("the same bytes give the candidate itself, first or second")
    func reused() async throws {
        let (row, pool) = try await row()
        let first = String("com.example.bench.") + "application"
        let second = String("another.application.") + "id.here"
        let fromFirst = try row.decodeText(column: 0, reusing: first, second)
        let fromSecond = try row.decodeText(column: 1, reusing: first, second)
        #expect(fromFirst == first && storage(fromFirst) == storage(first))
        #expect(fromSecond == second && storage(fromSecond) == storage(second))
        #expect(try row.decodeText(column: 5, reusing: "") == "")
        await pool.shutdown()
    }

    @Test("other bytes, NULL and a column that is not text decode as before")
    func decodedOtherwise() async throws {
        let (row, pool) = try await row()
        let held = String("com.example.bench.") + "application"
        let differingLast = try row.decodeText(column: 4, reusing: held)
        #expect(differingLast == "com.example.bench.applicatioN" && storage(differingLast) != storage(held))
        let unrelated = try row.decodeText(column: 0, reusing: nil, "another.application.id.here")
        #expect(unrelated == "com.example.bench.application")
        #expect(throws: StoreError.self) { try row.decodeText(column: 2, reusing: held) }
        // Columns that are not text are never matched by their bytes: an int4 of 42 comes in
        // binary as 00 00 00 2A, a jsonb as a version byte 01 and its JSON text.
        #expect(throws: StoreError.self) { try row.decodeText(column: 3, reusing: "\u{0}\u{0}\u{0}*") }
        let json = try row.decodeText(column: 6, reusing: "\u{1}\"x\"")
        #expect(json == "\"x\"")
        await pool.shutdown()
    }
}
