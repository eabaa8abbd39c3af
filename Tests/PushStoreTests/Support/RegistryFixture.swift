import PushStore
import Testing

/// A migrated scratch database and a pool on it, shared by the tests of one suite and
/// dropped when the suite ends. Tests in the suite run in parallel, so each uses its own
/// recipient and app ids.
struct RegistryFixture: Sendable {
    let configuration: StoreConfiguration
    let pool: ConnectionPool
    var registry: DeviceRegistry { DeviceRegistry(pool: pool) }

    @TaskLocal static var current: RegistryFixture?

    static func get() throws -> RegistryFixture {
        guard let current else { throw TestSetupError("the suite needs the .migratedScratchDatabase trait") }
        return current
    }
}

struct MigratedScratchDatabaseTrait: SuiteTrait, TestScoping {
    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        if RegistryFixture.current != nil {
            try await function()
            return
        }
        try await TestDatabase.withScratchDatabase(migrated: true) { configuration in
            var configuration = configuration
            configuration.poolSize = 4
            let pool = ConnectionPool(configuration: configuration)
            do {
                try await RegistryFixture.$current.withValue(RegistryFixture(configuration: configuration, pool: pool)) {
                    try await function()
                }
            } catch {
                await pool.shutdown()
                throw error
            }
            await pool.shutdown()
        }
    }
}

extension Trait where Self == MigratedScratchDatabaseTrait {
    /// Runs the suite in a freshly migrated database of its own.
    static var migratedScratchDatabase: Self { Self() }
}
