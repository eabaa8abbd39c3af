import PushWorker
import Testing

@Suite("Configuration: prepared device lookups (no servers)")
struct PreparedStatementsConfigurationTests {
    static func load(_ extra: [String: String]) throws -> WorkerConfiguration {
        try KeyCacheSizeConfigurationTests.load(extra)
    }

    @Test("on unless PUSHD_DATABASE_PREPARED_STATEMENTS turns it off; anything but a boolean is a configuration problem")
    func switchReadFromTheEnvironment() throws {
        #expect(try Self.load([:]).databasePreparedStatements)
        #expect(try Self.load(["PUSHD_DATABASE_PREPARED_STATEMENTS": "false"]).databasePreparedStatements == false)
        #expect(try Self.load(["PUSHD_DATABASE_PREPARED_STATEMENTS": "true"]).databasePreparedStatements)
        #expect { _ = try Self.load(["PUSHD_DATABASE_PREPARED_STATEMENTS": "sometimes"]) } throws: { error in
            "\(error)".contains("PUSHD_DATABASE_PREPARED_STATEMENTS")
        }
    }
}
