import Foundation
import PushStore
import Testing

/// The pool and its connections against the shared server: values, errors, timeouts,
/// cancellation, broken and leaked connections. Nothing here changes schema, so it uses the
/// server's database directly, each test with a pool of its own.
@Suite("Connections and pool against PostgreSQL")
struct ConnectionTests {
    private func pool(_ adjust: (inout StoreConfiguration) -> Void = { _ in }) throws -> ConnectionPool {
        var configuration = try TestDatabase.serverConfiguration()
        configuration.applicationName = TestDatabase.uniqueName("pushd_test_app")
        adjust(&configuration)
        return ConnectionPool(configuration: configuration)
    }

    /// Sessions of this pool's application name that the server still has.
    private func sessions(of pool: ConnectionPool, observer: ConnectionPool) async throws -> Int {
        try await observer.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = \(pool.configuration.applicationName)")
            .singleRow().decode(Int.self, column: 0)
    }

    @Test("values round-trip through binary parameters and typed decoding")
    func roundTrip() async throws {
        let pool = try pool()
        let when = Date(timeIntervalSince1970: 1_764_000_000.123456)
        let text = "Ünïcødé 😀 \u{202E}rtl 'quoted' \\ back\nslash"
        let row = try await pool.query("""
            SELECT \(Int64.max), \(Int32.min), \(true), \(2.5), \(text), \(when), \(Data([0, 1, 255])), \(String?.none),
                   pg_typeof(\(when))::text
            """).singleRow()
        let (big, small, flag, real, string, date, bytes, null, type) =
            try row.decode((Int64, Int32, Bool, Double, String, Date, Data, String?, String).self)
        #expect(big == .max)
        #expect(small == .min)
        #expect(flag)
        #expect(real == 2.5)
        #expect(string == text)
        #expect(abs(date.timeIntervalSince(when)) < 0.000_001)
        #expect(bytes == Data([0, 1, 255]))
        #expect(null == nil)
        #expect(type == "timestamp with time zone")
        let arrays = try await pool.query("""
            SELECT array_length(\(["a", "b'c", "d\\e"]), 1), (\(["a", "b'c", "d\\e"]))[2], (\([Int64(3), 4]))[2], cardinality(\([String]()))
            """).singleRow()
        let (length, second, number, empty) = try arrays.decode((Int, String, Int64, Int).self)
        #expect(length == 3 && second == "b'c" && number == 4 && empty == 0)
        await pool.shutdown()
    }

    @Test("a column of the wrong type, a NULL where none is allowed, and a wrong column count are clear errors")
    func decodingErrors() async throws {
        let pool = try pool()
        let row = try await pool.query("SELECT 'text'::text AS label, NULL::bigint AS missing").singleRow()
        let wrongType = #expect(throws: StoreError.self) { try row.decode(Int64.self, column: 0) }
        guard case .decoding(let failure)? = wrongType else { Issue.record("expected decoding, got \(String(describing: wrongType))"); return }
        #expect(failure.columnName == "label")
        #expect(failure.postgresType == .text)
        let null = #expect(throws: StoreError.self) { try row.decode(Int64.self, column: "missing") }
        #expect(null?.description.contains("NULL") == true)
        #expect(try row.decode(Int64?.self, column: "missing") == nil)
        #expect(throws: StoreError.self) { try row.decode((String, Int64?, Int).self) }
        #expect(throws: StoreError.self) { try row.decode(String.self, column: "nope") }
        await pool.shutdown()
    }

    @Test("server errors keep their SQLSTATE and fields and are not retryable")
    func serverErrors() async throws {
        let pool = try pool()
        let division = await #expect(throws: StoreError.self) { try await pool.query("SELECT 1 / \(0)") }
        #expect(division?.sqlState == "22012")
        #expect(division?.isRetryable == false)
        let missing = await #expect(throws: StoreError.self) { try await pool.query("SELECT * FROM pushd_no_such_table") }
        guard case .server(let error)? = missing else { Issue.record("expected a server error"); return }
        #expect(error.sqlState == "42P01")
        #expect(error.message.contains("pushd_no_such_table"))
        // The connection is fine afterwards.
        #expect(try await pool.query("SELECT 1").singleRow().decode(Int32.self, column: 0) == 1)
        #expect(pool.statistics.brokenConnectionsDiscarded == 0)
        await pool.shutdown()
    }

    @Test("text containing NUL is refused before sending, naming the parameter")
    func nulRefused() async throws {
        let pool = try pool()
        let error = await #expect(throws: StoreError.self) { try await pool.query("SELECT \(1), \("a\u{0}b")") }
        #expect(error == .invalidParameter(index: 2, reason: "text contains a NUL character, which PostgreSQL text cannot store"))
        #expect(pool.statistics.statementsSent == 0)
        await pool.shutdown()
    }

    @Test("a statement over the statement timeout fails with retryable 57014; the connection stays usable")
    func statementTimeout() async throws {
        let pool = try pool { $0.statementTimeout = .milliseconds(200) }
        let started = ContinuousClock.now
        let error = await #expect(throws: StoreError.self) { try await pool.query("SELECT pg_sleep(\(60.0))") }
        #expect(error?.sqlState == "57014")
        #expect(error?.isRetryable == true)
        #expect(ContinuousClock.now - started < .seconds(30), "ended by the timeout, long before the sleep")
        #expect(try await pool.query("SELECT 2").singleRow().decode(Int32.self, column: 0) == 2)
        #expect(pool.statistics.connectionsOpened == 1)
        await pool.shutdown()
    }

    @Test("cancelling the calling task cancels the statement on the server")
    func cancellation() async throws {
        let pool = try pool()
        let observer = try self.pool()
        let sleeper = Task { try await pool.query("SELECT pg_sleep(\(30.0))") }
        try await waitUntil("the sleep runs on the server") {
            try await observer.query("""
                SELECT count(*) FROM pg_stat_activity
                WHERE application_name = \(pool.configuration.applicationName) AND state = 'active' AND query LIKE 'SELECT pg_sleep%'
                """).singleRow().decode(Int.self, column: 0) == 1
        }
        let started = ContinuousClock.now
        sleeper.cancel()
        let result = await sleeper.result
        #expect(ContinuousClock.now - started < .seconds(25), "ended by the cancel, long before the 30 s sleep")
        guard case .failure(let error as StoreError) = result else { Issue.record("expected a StoreError, got \(result)"); return }
        #expect(error == .cancelled)
        #expect(try await pool.query("SELECT 3").singleRow().decode(Int32.self, column: 0) == 3)
        await pool.shutdown()
        await observer.shutdown()
    }

    @Test("a session killed mid-statement gives a retryable connectionLost; the next query gets a fresh connection")
    func killedInFlight() async throws {
        let pool = try pool { $0.poolSize = 1 }
        let observer = try self.pool()
        let victim = try await pool.withConnection { connection in await connection.serverProcessID }
        let sleeper = Task { try await pool.query("SELECT pg_sleep(\(30.0))") }
        try await waitUntil("the sleep runs on the server") {
            try await observer.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(victim) AND state = 'active'")
                .singleRow().decode(Int.self, column: 0) == 1
        }
        #expect(try await observer.query("SELECT pg_terminate_backend(\(victim))").singleRow().decode(Bool.self, column: 0))
        let result = await sleeper.result
        guard case .failure(let error as StoreError) = result, case .connectionLost(let loss) = error else {
            Issue.record("expected connectionLost, got \(result)"); return
        }
        #expect(error.isRetryable)
        #expect(loss.mayHaveExecuted)
        let fresh = try await pool.withConnection { connection in await connection.serverProcessID }
        #expect(fresh != victim)
        #expect(pool.statistics.brokenConnectionsDiscarded == 1)
        #expect(pool.statistics.connectionsOpened == 2)
        await pool.shutdown()
        await observer.shutdown()
    }

    @Test("a session killed while idle is noticed before the next statement, which runs on a new connection")
    func killedWhileIdle() async throws {
        let pool = try pool { $0.poolSize = 1 }
        let observer = try self.pool()
        let victim = try await pool.withConnection { connection in await connection.serverProcessID }
        #expect(try await observer.query("SELECT pg_terminate_backend(\(victim), \(Int64(5000)))").singleRow().decode(Bool.self, column: 0))
        let pid = try await pool.query("SELECT pg_backend_pid()").singleRow().decode(Int32.self, column: 0)
        #expect(pid != victim)
        #expect(pool.statistics.brokenConnectionsDiscarded == 1)
        await pool.shutdown()
        await observer.shutdown()
    }

    @Test("a connection handed back inside a transaction is closed, not reused")
    func leakedTransaction() async throws {
        let pool = try pool { $0.poolSize = 1 }
        let first = try await pool.withConnection { connection throws(StoreError) in
            _ = try await connection.query("BEGIN")
            return await connection.serverProcessID
        }
        let (second, savepointError) = try await pool.withConnection { connection throws(StoreError) in
            let pid = await connection.serverProcessID
            // SAVEPOINT outside a transaction block fails with 25P01: proof the new session is clean.
            do throws(StoreError) {
                _ = try await connection.query("SAVEPOINT probe")
                return (pid, nil as String?)
            } catch {
                return (pid, error.sqlState)
            }
        }
        #expect(first != second)
        #expect(savepointError == "25P01")
        let observer = try self.pool()
        try await waitUntil("the leaked session is gone") {
            try await observer.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(first)").singleRow().decode(Int.self, column: 0) == 0
        }
        await observer.shutdown()
        await pool.shutdown()
    }

    @Test("a transaction commits, or rolls back when its body throws")
    func transactions() async throws {
        let pool = try pool { $0.poolSize = 1 }
        let (committed, rolledBack) = try await pool.withConnection { connection throws(StoreError) in
            _ = try await connection.query("CREATE TEMPORARY TABLE t (x int)")
            try await connection.transaction { connection throws(StoreError) in
                _ = try await connection.query("INSERT INTO t VALUES (\(Int32(1)))")
            }
            do throws(StoreError) {
                try await connection.transaction { connection throws(StoreError) in
                    _ = try await connection.query("INSERT INTO t VALUES (\(Int32(2)))")
                    _ = try await connection.query("SELECT 1 / \(0)")
                }
            } catch {
                #expect(error.sqlState == "22012")
            }
            let values = try await connection.query("SELECT x FROM t ORDER BY x").map { row throws(StoreError) in try row.decode(Int32.self, column: 0) }
            return (values.contains(1), !values.contains(2))
        }
        #expect(committed)
        #expect(rolledBack)
        await pool.shutdown()
    }

    @Test("the pool never opens more than poolSize connections, and callers wait their turn")
    func bounded() async throws {
        let pool = try pool {
            $0.poolSize = 2
            $0.poolGrowthDelay = .zero  // every waiting caller asks for a connection at once
        }
        let answers = try await withThrowingTaskGroup(of: Int32.self) { group in
            for index in 0..<12 {
                group.addTask { try await pool.query("SELECT \(Int32(index)) FROM pg_sleep(\(0.02))").singleRow().decode(Int32.self, column: 0) }
            }
            return try await group.reduce(into: Set<Int32>()) { $0.insert($1) }
        }
        #expect(answers == Set(0..<12))
        #expect(pool.statistics.connectionsOpened == 2)
        await pool.shutdown()
    }

    @Test("a caller that gets no connection within the acquire timeout fails with a retryable poolTimeout")
    func acquireTimeout() async throws {
        let pool = try pool {
            $0.poolSize = 1
            $0.acquireTimeout = .seconds(2)
        }
        // Opened now, so the holder below gets it at once. Retrying: on a machine loaded by the
        // whole suite, opening a connection alone can take longer than this pool's 2 s.
        _ = try await pool.retrying(attempts: 5) { () throws(StoreError) in try await pool.query("SELECT 1") }
        // Hold the only connection until the test lets go.
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let (entered, announce) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await pool.retrying(attempts: 5) { () throws(StoreError) in
                try await pool.withConnection { _ in
                    announce.yield()
                    for await _ in release {}
                }
            }
        }
        // Wait for the holder to be inside its body (holding the connection), not for a
        // statistic that a previous caller's late release could also satisfy.
        var announcements = entered.makeAsyncIterator()
        _ = await announcements.next()
        #expect(pool.statistics.leased == 1)
        let error = await #expect(throws: StoreError.self) { try await pool.query("SELECT 1") }
        releaser.finish()
        try await holder.value
        guard case .poolTimeout? = error else { Issue.record("expected poolTimeout, got \(String(describing: error))"); return }
        #expect(error?.isRetryable == true)
        // Free again once released (retrying: on a loaded machine the hand-back may trail the
        // holder's return by more than one acquire timeout).
        let again = try await pool.retrying(attempts: 5) { () throws(StoreError) in
            try await pool.query("SELECT 1").singleRow().decode(Int32.self, column: 0)
        }
        #expect(again == 1)
        await pool.shutdown()
    }

    @Test("a burst of quick statements is served by the first connection; a caller that waits out the growth delay gets another")
    func growsOnlyAfterWaiting() async throws {
        let pool = try pool {
            $0.poolSize = 4
            $0.poolGrowthDelay = .seconds(30)
            $0.acquireTimeout = .seconds(60)
        }
        let answers = try await withThrowingTaskGroup(of: Int32.self) { group in
            for index in 0..<16 {
                group.addTask { try await pool.query("SELECT \(Int32(index))").singleRow().decode(Int32.self, column: 0) }
            }
            return try await group.reduce(into: Set<Int32>()) { $0.insert($1) }
        }
        #expect(answers == Set(0..<16))
        #expect(pool.statistics.connectionsOpened == 1, "none of them waited 30 s")
        await pool.shutdown()

        let growing = try self.pool {
            $0.poolSize = 4
            $0.poolGrowthDelay = .milliseconds(50)
        }
        _ = try await growing.query("SELECT 1")
        // Hold the only connection until the second caller is answered: only a connection
        // opened for it after its delay can answer it.
        let (answered, announce) = AsyncStream<Void>.makeStream()
        let (entered, enter) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await growing.withConnection { _ in
                enter.yield()
                for await _ in answered {}
            }
        }
        var entries = entered.makeAsyncIterator()
        _ = await entries.next()
        #expect(try await growing.query("SELECT 2").singleRow().decode(Int32.self, column: 0) == 2)
        announce.finish()
        try await holder.value
        #expect(growing.statistics.connectionsOpened == 2)
        await growing.shutdown()
    }

    @Test("shutdown closes every connection on the server and refuses later calls")
    func shutdown() async throws {
        let pool = try pool {
            $0.poolSize = 3
            $0.poolGrowthDelay = .zero  // the three overlapping statements get three connections
        }
        let observer = try self.pool()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { _ = try await pool.query("SELECT pg_sleep(\(0.05))") } }
            try await group.waitForAll()
        }
        #expect(try await sessions(of: pool, observer: observer) == 3)
        await pool.shutdown()
        #expect(pool.statistics.connectionsClosed == 3)
        try await waitUntil("the server has ended the sessions") { try await sessions(of: pool, observer: observer) == 0 }
        let error = await #expect(throws: StoreError.self) { try await pool.query("SELECT 1") }
        #expect(error == .poolClosed)
        await observer.shutdown()
    }
}
