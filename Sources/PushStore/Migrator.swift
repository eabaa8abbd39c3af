import Foundation
import PushRuntime

/// Applies schema migrations, safely when many processes start at once.
///
/// The whole run holds a session-level advisory lock on one dedicated connection, so
/// concurrent migrators queue: the first applies what is pending, the others then find
/// nothing left to do. Each migration runs in its own transaction together with its row in
/// `pushd_schema_migrations`, so a migration is either applied and recorded or neither.
/// Applied migrations are verified by SHA-256: an edited file stops the run before anything
/// else is applied.
public struct Migrator: Sendable {
    /// The `pg_advisory_lock` key: the ASCII bytes `pushd_mg` read as a big-endian integer.
    /// Fixed forever, so every version of pushd excludes every other.
    public static let advisoryLockKey: Int64 = 0x7075_7368_645F_6D67

    public let configuration: StoreConfiguration
    /// How long to wait for another process's run to finish before giving up.
    public var lockTimeout: Duration = .seconds(300)
    let logger: Logger

    public init(configuration: StoreConfiguration, logger: Logger = Logger(label: "pushd.migrate")) {
        self.configuration = configuration
        self.logger = logger.with(["database": .string(configuration.redactedDescription)])
    }

    /// What a run did.
    public struct Report: Sendable, Equatable {
        public struct Applied: Sendable, Equatable {
            public let version: Int
            public let name: String
            public let duration: Duration
        }

        public let applied: [Applied]
        /// Versions that were applied before this run (and verified).
        public let alreadyApplied: [Int]
        /// Versions recorded in the database with no file here: a newer pushd applied them.
        public let unknownApplied: [Int]
    }

    /// Applies the pending `migrations` (all of them, in version order).
    public func migrate(_ migrations: [Migration]) async throws(MigrationError) -> Report {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: configuration, name: "pg-migrate", logger: logger)
        } catch {
            throw .store(error)
        }
        do {
            let report = try await migrateHoldingLock(migrations.sorted { $0.version < $1.version }, on: connection)
            await connection.close()
            return report
        } catch {
            await connection.close()
            throw error
        }
    }

    private func migrateHoldingLock(_ migrations: [Migration], on connection: PostgresConnection) async throws(MigrationError) -> Report {
        let key = Self.advisoryLockKey
        do {
            let acquired = try await connection.query("SELECT pg_try_advisory_lock(\(key))").singleRow().decode(Bool.self, column: 0)
            if !acquired {
                logger.info("another process is migrating; waiting for its lock", ["timeout_s": .int(lockTimeout.wholeSeconds)])
                _ = try await connection.query("SELECT set_config('statement_timeout', \(String(lockTimeout.wholeMilliseconds)), false)")
                _ = try await connection.query("SELECT pg_advisory_lock(\(key))")
            }
        } catch {
            if error.sqlState == "57014" { throw .lockTimeout(lockTimeout) }
            throw .store(error)
        }
        do {
            let report = try await migrateLocked(migrations, on: connection)
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(key))")
            return report
        } catch {
            // Also released when the session ends, which follows right after.
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(key))")
            throw error
        }
    }

    private func migrateLocked(_ migrations: [Migration], on connection: PostgresConnection) async throws(MigrationError) -> Report {
        let checksums: [String]
        let applied: [(version: Int, name: String, checksum: String)]
        do {
            // Migrations may build indexes on big tables: no statement timeout from here on.
            _ = try await connection.query("SELECT set_config('statement_timeout', '0', false)")
            _ = try await connection.query("""
                CREATE TABLE IF NOT EXISTS pushd_schema_migrations (
                    version    integer PRIMARY KEY,
                    name       text NOT NULL,
                    checksum   text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            checksums = try await Self.sha256(migrations.map { Data($0.sql.utf8) }, on: connection)
            applied = try await connection.query("SELECT version, name, checksum FROM pushd_schema_migrations ORDER BY version")
                .map { row throws(StoreError) in
                    let (version, name, checksum) = try row.decode((Int, String, String).self)
                    return (version, name, checksum)
                }
        } catch {
            throw .store(error)
        }

        let local = Dictionary(uniqueKeysWithValues: zip(migrations, checksums).map { ($0.version, ($0, $1)) })
        for record in applied {
            guard let (migration, checksum) = local[record.version] else { continue }
            guard record.name == migration.name else {
                throw .renamed(version: record.version, applied: record.name, onDisk: migration.name)
            }
            guard record.checksum == checksum else {
                throw .checksumMismatch(version: record.version, name: record.name, applied: record.checksum, onDisk: checksum)
            }
        }
        let appliedVersions = Set(applied.map(\.version))
        let pending = migrations.filter { !appliedVersions.contains($0.version) }
        if let newest = appliedVersions.max(), let first = pending.first, first.version < newest {
            throw .outOfOrder(pending: first.version, newestApplied: newest)
        }

        var done: [Report.Applied] = []
        for migration in pending {
            let checksum = local[migration.version]?.1 ?? ""
            done.append(try await apply(migration, checksum: checksum, on: connection))
        }
        return Report(
            applied: done,
            alreadyApplied: applied.map(\.version).filter { local[$0] != nil },
            unknownApplied: applied.map(\.version).filter { local[$0] == nil })
    }

    /// One migration and its record, in one transaction.
    private func apply(_ migration: Migration, checksum: String, on connection: PostgresConnection) async throws(MigrationError) -> Report.Applied {
        let started = ContinuousClock.now
        do {
            _ = try await connection.query("BEGIN")
            try await connection.runScript(migration.sql)
            guard !connection.isIdleOutsideTransaction else {
                throw MigrationError.leftTransaction(version: migration.version, name: migration.name)
            }
            _ = try await connection.query("""
                INSERT INTO pushd_schema_migrations (version, name, checksum)
                VALUES (\(Int32(migration.version)), \(migration.name), \(checksum))
                """)
            _ = try await connection.query("COMMIT")
        } catch let error as MigrationError {
            throw error
        } catch let error as StoreError {
            if connection.isUsable { _ = try? await connection.query("ROLLBACK") }
            throw .failed(version: migration.version, name: migration.name, error)
        } catch {
            throw .failed(version: migration.version, name: migration.name, .unexpectedResult("\(error)"))
        }
        let duration = ContinuousClock.now - started
        logger.info("migration applied", [
            "version": .int(migration.version), "name": .string(migration.name),
            "ms": .int(Int(duration.wholeMilliseconds)),
        ])
        return Report.Applied(version: migration.version, name: migration.name, duration: duration)
    }

    /// SHA-256 of each script, hex, computed by the server in one round trip: the same value
    /// `sha256sum` prints for the file.
    private static func sha256(_ contents: [Data], on connection: PostgresConnection) async throws(StoreError) -> [String] {
        guard !contents.isEmpty else { return [] }
        return try await connection.query("""
            SELECT encode(sha256(u.content), 'hex') FROM unnest(\(contents)) WITH ORDINALITY AS u(content, n) ORDER BY u.n
            """).map { row throws(StoreError) in try row.decode(String.self, column: 0) }
    }
}

extension PostgresConnection {
    /// Runs a migration script (several statements) on this connection's thread.
    func runScript(_ sql: String) async throws(StoreError) {
        try await cancellable { () throws(StoreError) in try executeScript(sql) }
    }
}
