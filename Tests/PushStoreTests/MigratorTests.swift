import Foundation
import PushStore
import PushTestSupport
import Testing

/// Each test migrates a database of its own (created and dropped here).
@Suite("Migrator")
struct MigratorTests {
    private func appliedRows(_ configuration: StoreConfiguration) async throws -> [(version: Int, name: String, checksum: String, appliedAt: Date)] {
        try await TestDatabase.withPool(configuration) { pool in
            try await pool.query("SELECT version, name, checksum, applied_at FROM pushd_schema_migrations ORDER BY version")
                .map { row throws(StoreError) in
                    let (version, name, checksum, appliedAt) = try row.decode((Int, String, String, Date).self)
                    return (version, name, checksum, appliedAt)
                }
        }
    }

    private func scalar<Value: SQLDecodable>(_ query: SQLQuery, as type: Value.Type, in configuration: StoreConfiguration) async throws -> Value {
        try await TestDatabase.withPool(configuration) { pool in try await pool.query(query).singleRow().decode(type, column: 0) }
    }

    /// A directory of migration files for one test.
    private func migrations(_ files: [String: String]) throws -> URL {
        let url = try BuildProducts.temporaryDirectory("migrations")
        for (name, sql) in files { try sql.write(to: url.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return url
    }

    @Test("an empty database gets every migration, each recorded with its SHA-256; a second run changes nothing")
    func emptyThenAgain() async throws {
        let files = try TestDatabase.repositoryMigrations()
        try #require(files.count >= 2)
        try await TestDatabase.withScratchDatabase { configuration in
            let first = try await Migrator(configuration: configuration).migrate(files)
            #expect(first.applied.map(\.version) == files.map(\.version))
            #expect(first.alreadyApplied.isEmpty)
            let rows = try await appliedRows(configuration)
            #expect(rows.map(\.version) == files.map(\.version))
            #expect(rows.map(\.name) == files.map(\.name))
            #expect(rows.allSatisfy { $0.checksum.count == 64 && $0.checksum.allSatisfy(\.isHexDigit) })
            #expect(try await scalar(
                "SELECT to_regprocedure('pushd_register_device(text,text,text,text,text,text,text)') IS NOT NULL AND to_regclass('devices') IS NOT NULL",
                as: Bool.self, in: configuration))

            let second = try await Migrator(configuration: configuration).migrate(files)
            #expect(second.applied.isEmpty)
            #expect(second.alreadyApplied == files.map(\.version))
            let again = try await appliedRows(configuration)
            #expect(again.map(\.appliedAt) == rows.map(\.appliedAt))
        }
    }

    @Test("two pushd migrate processes started together: both succeed, every migration is applied exactly once")
    func twoProcesses() async throws {
        try await TestDatabase.withScratchDatabase { configuration in
            // Hold the migration lock so both processes are provably waiting at the same time,
            // then let them race for it.
            let holder = try await PostgresConnection.connect(configuration: configuration)
            _ = try await holder.query("SELECT pg_advisory_lock(\(Migrator.advisoryLockKey))")
            let environment = TestDatabase.childEnvironment(for: configuration)
            let migrations = BuildProducts.repositoryRoot.appendingPathComponent("Schemas/sql").path
            let processes = (0..<2).map { _ in
                Task { try await runTool(BuildProducts.pushd, ["migrate", "--migrations", migrations], environment: environment) }
            }
            let database = try #require(configuration.databaseName)
            try await waitUntil("both processes wait for the migration lock") {
                try await holder.query("""
                    SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                    WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = \(database)
                    """).singleRow().decode(Int.self, column: 0) == 2
            }
            _ = try await holder.query("SELECT pg_advisory_unlock(\(Migrator.advisoryLockKey))")
            await holder.close()
            var results: [ToolResult] = []
            for process in processes { results.append(try await process.value) }
            for result in results {
                #expect(result.status == 0, "pushd migrate failed: \(result.errors)")
            }
            let files = try TestDatabase.repositoryMigrations()
            let counts = results.map { $0.output.components(separatedBy: "\n").filter { $0.hasPrefix("applied ") }.count }
            #expect(counts.sorted() == [0, files.count], "one process applies everything, the other finds it done: \(results.map(\.output))")
            let rows = try await appliedRows(configuration)
            #expect(rows.map(\.version) == files.map(\.version))
        }
    }

    @Test("an applied migration that was edited stops the run before anything else is applied")
    func checksumChanged() async throws {
        let directory = try migrations([
            "0001_one.sql": "CREATE TABLE one (id int);",
            "0002_two.sql": "CREATE TABLE two (id int);",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withScratchDatabase { configuration in
            _ = try await Migrator(configuration: configuration).migrate(try Migration.load(from: directory))
            try "CREATE TABLE two (id bigint);".write(to: directory.appendingPathComponent("0002_two.sql"), atomically: true, encoding: .utf8)
            try "CREATE TABLE three (id int);".write(to: directory.appendingPathComponent("0003_three.sql"), atomically: true, encoding: .utf8)
            let error = await #expect(throws: MigrationError.self) {
                try await Migrator(configuration: configuration).migrate(try Migration.load(from: directory))
            }
            guard case .checksumMismatch(let version, let name, _, _)? = error else {
                Issue.record("expected checksumMismatch, got \(String(describing: error))"); return
            }
            #expect(version == 2 && name == "two")
            #expect(try await scalar("SELECT to_regclass('three') IS NULL", as: Bool.self, in: configuration))
            #expect(try await appliedRows(configuration).map(\.version) == [1, 2])
        }
    }

    @Test("a failing migration is rolled back entirely and not recorded; fixed, it applies")
    func failureRollsBack() async throws {
        let directory = try migrations([
            "0001_one.sql": "CREATE TABLE one (id int);",
            "0002_broken.sql": "CREATE TABLE half (id int);\nSELECT 1 / 0;",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withScratchDatabase { configuration in
            let error = await #expect(throws: MigrationError.self) {
                try await Migrator(configuration: configuration).migrate(try Migration.load(from: directory))
            }
            guard case .failed(2, "broken", let cause)? = error else { Issue.record("expected failed(2), got \(String(describing: error))"); return }
            #expect(cause.sqlState == "22012")
            #expect(try await scalar("SELECT to_regclass('half') IS NULL AND to_regclass('one') IS NOT NULL", as: Bool.self, in: configuration))
            #expect(try await appliedRows(configuration).map(\.version) == [1])

            try "CREATE TABLE half (id int);".write(to: directory.appendingPathComponent("0002_broken.sql"), atomically: true, encoding: .utf8)
            let report = try await Migrator(configuration: configuration).migrate(try Migration.load(from: directory))
            #expect(report.applied.map(\.version) == [2])
        }
    }

    @Test("a migration older than an applied one is refused, not applied out of order")
    func outOfOrder() async throws {
        let directory = try migrations(["0001_one.sql": "CREATE TABLE one (id int);", "0003_three.sql": "CREATE TABLE three (id int);"])
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withScratchDatabase { configuration in
            _ = try await Migrator(configuration: configuration).migrate(try Migration.load(from: directory))
            try "CREATE TABLE two (id int);".write(to: directory.appendingPathComponent("0002_two.sql"), atomically: true, encoding: .utf8)
            let error = await #expect(throws: MigrationError.self) {
                try await Migrator(configuration: configuration).migrate(try Migration.load(from: directory))
            }
            #expect(error == .outOfOrder(pending: 2, newestApplied: 3))
        }
    }

    @Test("a migration that commits by itself is reported, since its atomicity is lost")
    func transactionControl() async throws {
        let directory = try migrations(["0001_sneaky.sql": "CREATE TABLE sneaky (id int); COMMIT;"])
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withScratchDatabase { configuration throws in
            let error = await #expect(throws: MigrationError.self) {
                try await Migrator(configuration: configuration).migrate(try Migration.load(from: directory))
            }
            #expect(error == .leftTransaction(version: 1, name: "sneaky"))
            #expect(try await appliedRows(configuration).isEmpty)
        }
    }

    @Test("pushd migrate without a database says how to give one and exits 64")
    func cliWithoutDatabase() async throws {
        let result = try await runTool(BuildProducts.pushd, ["migrate"], environment: ["PUSHD_DATABASE_URL": ""])
        #expect(result.status == 64)
        #expect(result.errors.contains("PUSHD_DATABASE_URL"))
    }
}
