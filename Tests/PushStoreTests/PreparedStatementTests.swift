import Foundation
import PushStore
import Testing

/// `SQLQuery.prepared`: prepared once per session, then executed by name, and prepared again
/// when the session lost it or the table under it changed shape. Each test has a pool of one
/// connection, so every statement runs on the same session; the only table is a temporary
/// one of that session.
@Suite("Prepared statements against PostgreSQL")
struct PreparedStatementTests {
    private func singleSessionPool(preparesStatements: Bool = true) throws -> ConnectionPool {
        var configuration = try TestDatabase.serverConfiguration()
        configuration.applicationName = TestDatabase.uniqueName("pushd_test_prepared")
        configuration.poolSize = 1
        configuration.preparesStatements = preparesStatements
        return ConnectionPool(configuration: configuration)
    }

    /// A temporary table of the session with one row (7), and a query for that row.
    private func probeTable(_ pool: ConnectionPool) async throws -> SQLQuery {
        _ = try await pool.query("CREATE TEMP TABLE pushd_prepared_probe (a bigint)")
        _ = try await pool.query("INSERT INTO pushd_prepared_probe VALUES (\(Int64(7)))")
        return "SELECT * FROM pushd_prepared_probe WHERE a = \(Int64(7))"
    }

    /// The error `query` fails with inside a transaction on the pool's connection.
    private func failureInsideTransaction(_ pool: ConnectionPool, _ query: SQLQuery) async -> StoreError? {
        await #expect(throws: StoreError.self) {
            try await pool.withConnection { connection throws(StoreError) in
                try await connection.transaction { connection throws(StoreError) in
                    _ = try await connection.query(query)
                }
            }
        }
    }

    private func lookup(_ value: Int64) -> SQLQuery {
        let query: SQLQuery = "SELECT \(value) * 2, \("label-\(value)")"
        return query.prepared
    }

    /// The prepared statements the session holds, by the text they were prepared from.
    private func serverSideStatements(_ pool: ConnectionPool, containing text: String) async throws -> Int {
        try await pool.query("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE \("%" + text + "%") AND NOT from_sql")
            .singleRow().decode(Int.self, column: 0)
    }

    @Test("the first call prepares, later calls with other values only execute, and each gets its own values back")
    func preparesOnce() async throws {
        let pool = try singleSessionPool()
        let before = pool.statistics
        for value in Int64(1)...5 {
            let (doubled, label) = try await pool.query(lookup(value)).singleRow().decode((Int64, String).self)
            #expect(doubled == value * 2)
            #expect(label == "label-\(value)")
        }
        #expect(pool.statistics.statementsPrepared - before.statementsPrepared == 1)
        #expect(pool.statistics.statementsSent - before.statementsSent == 5)
        #expect(try await serverSideStatements(pool, containing: "* 2") == 1)
        // The same text unprepared is not prepared at all.
        _ = try await pool.query("SELECT \(Int64(3)) * 2, \("x")")
        #expect(pool.statistics.statementsPrepared - before.statementsPrepared == 1)
        await pool.shutdown()
    }

    @Test("a statement the session lost (DEALLOCATE ALL) is prepared again, and the call succeeds")
    func preparedAgainAfterDeallocate() async throws {
        let pool = try singleSessionPool()
        _ = try await pool.query(lookup(1))
        _ = try await pool.query("DEALLOCATE ALL")
        #expect(try await serverSideStatements(pool, containing: "* 2") == 0)
        let (doubled, _) = try await pool.query(lookup(21)).singleRow().decode((Int64, String).self)
        #expect(doubled == 42)
        #expect(pool.statistics.statementsPrepared == 2)
        #expect(try await serverSideStatements(pool, containing: "* 2") == 1)
        #expect(pool.statistics.brokenConnectionsDiscarded == 0)
        await pool.shutdown()
    }

    @Test("a table that changed shape under a prepared statement gives the new columns, not 'cached plan must not change result type'")
    func preparedAgainAfterAlterTable() async throws {
        let pool = try singleSessionPool()
        let select = try await probeTable(pool)
        #expect(try await pool.query(select.prepared).columns.count == 1)
        _ = try await pool.query("ALTER TABLE pushd_prepared_probe ADD COLUMN b text DEFAULT 'added'")
        let row = try await pool.query(select.prepared).singleRow()
        let (a, b) = try row.decode((Int64, String).self)
        #expect(a == 7 && b == "added")
        #expect(pool.statistics.statementsPrepared == 2)
        // Only the current one is left on the server: the stale one was deallocated.
        #expect(try await serverSideStatements(pool, containing: "pushd_prepared_probe") == 1)
        await pool.shutdown()
    }

    @Test("inside a transaction a lost statement fails the call (the transaction is aborted); the next call outside succeeds")
    func notRetriedInsideTransaction() async throws {
        let pool = try singleSessionPool()
        _ = try await pool.query(lookup(1))
        _ = try await pool.query("DEALLOCATE ALL")
        let failure = await failureInsideTransaction(pool, lookup(2))
        #expect(failure?.sqlState == "26000")
        #expect(pool.statistics.statementsPrepared == 1, "not prepared again inside the failed transaction")
        let (doubled, _) = try await pool.query(lookup(4)).singleRow().decode((Int64, String).self)
        #expect(doubled == 8)
        // The failure dropped it from the connection's list: prepared again, and executed once.
        #expect(pool.statistics.statementsPrepared == 2)
        await pool.shutdown()
    }

    @Test("a statement gone stale inside a transaction is found again outside (42P05), replaced, and the call succeeds")
    func staleInsideTransactionReplacedOutside() async throws {
        let pool = try singleSessionPool()
        let select = try await probeTable(pool)
        _ = try await pool.query(select.prepared)
        _ = try await pool.query("ALTER TABLE pushd_prepared_probe ADD COLUMN b text DEFAULT 'added'")
        let failure = await failureInsideTransaction(pool, select.prepared)
        #expect(failure?.sqlState == "0A000")
        // Still on the server under its name: the next call outside meets it (42P05), fails on
        // it once more, deallocates it and prepares it for the new shape.
        #expect(try await serverSideStatements(pool, containing: "pushd_prepared_probe") == 1)
        let (a, b) = try await pool.query(select.prepared).singleRow().decode((Int64, String).self)
        #expect(a == 7 && b == "added")
        #expect(pool.statistics.statementsPrepared == 3, "first, the one that met the stale statement, its replacement")
        #expect(try await serverSideStatements(pool, containing: "pushd_prepared_probe") == 1)
        #expect(pool.statistics.brokenConnectionsDiscarded == 0)
        await pool.shutdown()
    }

    @Test("with preparesStatements off, a prepared query is sent as a plain one: nothing is prepared on the server")
    func switchedOff() async throws {
        let pool = try singleSessionPool(preparesStatements: false)
        for value in Int64(1)...3 {
            #expect(try await pool.query(lookup(value)).singleRow().decode(Int64.self, column: 0) == value * 2)
        }
        #expect(pool.statistics.statementsPrepared == 0)
        #expect(try await serverSideStatements(pool, containing: "* 2") == 0)
        await pool.shutdown()
    }
}
