import Foundation
import PushStore

/// A database of one test's own on the test PostgreSQL server, so that no test depends on
/// what another test, another suite or `Deploy/cluster.sh` left in a shared database.
///
/// `create` makes it (migrated with the repository's own `Schemas/sql` when asked);
/// `drop` removes it and ends every session still connected to it. Callers drop it on every
/// path, failure included; `withScratchDatabase` does that for them.
public struct ScratchDatabase: Sendable {
    /// Every scratch database's name starts with this, so a leftover is recognisable.
    public static let namePrefix = "pushd_test_"

    public let name: String
    /// Connects to the scratch database.
    public let configuration: StoreConfiguration
    /// Connects to the server's own database, for creating and dropping.
    private let server: StoreConfiguration

    /// The test server from `PUSHD_DATABASE_URL` (set by `Deploy/test.sh`).
    public static func serverConfiguration() throws -> StoreConfiguration {
        var configuration = try StoreConfiguration(url: try TestServers.databaseURL())
        configuration.poolSize = 2
        configuration.acquireTimeout = .seconds(30)
        configuration.applicationName = "pushd-tests"
        return configuration
    }

    /// Creates `pushd_test_<random>` on `server`; with `migrated`, applies the repository's
    /// migrations to it. A failed migration drops the database before rethrowing.
    public static func create(migrated: Bool, server: StoreConfiguration? = nil) async throws -> ScratchDatabase {
        let server = try server ?? serverConfiguration()
        let name = namePrefix + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try await withAdminPool(server) { admin in
            _ = try await admin.query("CREATE DATABASE \(identifier: try SQLIdentifier(name))")
        }
        let database = ScratchDatabase(name: name, configuration: server.withDatabase(name), server: server)
        guard migrated else { return database }
        do {
            let migrations = try Migration.load(from: BuildProducts.repositoryRoot.appendingPathComponent("Schemas/sql"))
            _ = try await Migrator(configuration: database.configuration).migrate(migrations)
        } catch {
            await database.drop()
            throw error
        }
        return database
    }

    /// Drops the database, disconnecting whoever still uses it. Never throws: it runs on
    /// failure paths, where the original error is the one worth reporting. A refused drop
    /// is tried again (a CI run once left one database behind with no trace of why), and a
    /// drop that still fails is written to standard error, so the leftover check that
    /// fails the run has a cause to show.
    public func drop() async {
        let attempts = 5
        for attempt in 1...attempts {
            do {
                try await Self.withAdminPool(server) { admin in
                    _ = try await admin.query("DROP DATABASE IF EXISTS \(identifier: try SQLIdentifier(name)) WITH (FORCE)")
                }
                return
            } catch {
                guard attempt < attempts else {
                    FileHandle.standardError.write(Data("scratch database \(name) not dropped: \(error)\n".utf8))
                    return
                }
                // Back-off between tries, not synchronisation: nothing else is awaited here.
                try? await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
    }

    /// Whether a database named `name` exists on the test server: for tests of cleanup.
    public static func exists(_ name: String) async throws -> Bool {
        try await withAdminPool(try serverConfiguration()) { admin in
            try await admin.query("SELECT 1 FROM pg_database WHERE datname = \(name)").count == 1
        }
    }

    /// `PUSHD_DATABASE_URL` (libpq keyword form) and `PGPASSWORD` for a child process that
    /// should use this database; the password stays off the command line.
    public var childEnvironment: [String: String] {
        let (connection, password) = configuration.toolConnection()
        var environment = ["PUSHD_DATABASE_URL": connection]
        if let password { environment["PGPASSWORD"] = password }
        return environment
    }

    private static func withAdminPool<Result: Sendable>(
        _ server: StoreConfiguration, _ body: (ConnectionPool) async throws -> Result
    ) async throws -> Result {
        let admin = ConnectionPool(configuration: server)
        do {
            let result = try await body(admin)
            await admin.shutdown()
            return result
        } catch {
            await admin.shutdown()
            throw error
        }
    }
}

/// Runs `body` with a fresh scratch database and drops it afterwards, also when `body` throws.
public func withScratchDatabase<Result: Sendable>(
    migrated: Bool, server: StoreConfiguration? = nil, _ body: (ScratchDatabase) async throws -> Result
) async throws -> Result {
    let database = try await ScratchDatabase.create(migrated: migrated, server: server)
    do {
        let result = try await body(database)
        await database.drop()
        return result
    } catch {
        await database.drop()
        throw error
    }
}
