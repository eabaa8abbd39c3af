import Foundation
import PushStore
import PushTestSupport

/// A test cannot run because its environment is missing: reported as a failure, never a skip.
struct TestSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The shared PostgreSQL (`PUSHD_DATABASE_URL`) and scratch databases on it. Other suites use
/// the same server at the same time, so every test that changes schema works in a database
/// of its own, created here and dropped afterwards.
enum TestDatabase {
    static func serverConfiguration() throws -> StoreConfiguration {
        guard let url = ProcessInfo.processInfo.environment["PUSHD_DATABASE_URL"], !url.isEmpty else {
            throw TestSetupError("""
                PUSHD_DATABASE_URL is not set: the PushStore tests run against a real PostgreSQL. \
                Start one with `Deploy/local/services.sh start` and `eval "$(Deploy/local/services.sh env)"` \
                (Deploy/test.sh does both).
                """)
        }
        var configuration = try StoreConfiguration(url: url)
        configuration.poolSize = 2
        configuration.acquireTimeout = .seconds(30)
        configuration.applicationName = "pushd-store-tests"
        return configuration
    }

    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
    }

    /// The repository's own migrations.
    static func repositoryMigrations() throws -> [Migration] {
        try Migration.load(from: BuildProducts.repositoryRoot.appendingPathComponent("Schemas/sql"))
    }

    /// Creates `pushd_test_<random>`, runs `body` with its configuration, and drops it, also
    /// when `body` throws.
    static func withScratchDatabase<Result: Sendable>(
        migrated: Bool = false, _ body: (StoreConfiguration) async throws -> Result
    ) async throws -> Result {
        try await PushTestSupport.withScratchDatabase(migrated: migrated, server: try serverConfiguration()) { database in
            try await body(database.configuration)
        }
    }

    /// A pool for the duration of `body`, shut down afterwards.
    static func withPool<Result: Sendable>(
        _ configuration: StoreConfiguration, _ body: (ConnectionPool) async throws -> Result
    ) async throws -> Result {
        let pool = ConnectionPool(configuration: configuration)
        do {
            let result = try await body(pool)
            await pool.shutdown()
            return result
        } catch {
            await pool.shutdown()
            throw error
        }
    }

    /// A connection string for a child process (`pushd migrate`), and its password apart.
    static func childEnvironment(for configuration: StoreConfiguration) -> [String: String] {
        let (connection, password) = configuration.toolConnection()
        var environment = ["PUSHD_DATABASE_URL": connection]
        if let password { environment["PGPASSWORD"] = password }
        return environment
    }
}
