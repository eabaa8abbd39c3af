import PushStore
import Testing

@Suite("Store configuration: database URLs")
struct StoreConfigurationTests {
    @Test("a URL is parsed by libpq into its parameters")
    func parsesURL() throws {
        let configuration = try StoreConfiguration(url: "postgresql://app:s3cr3t@db.example:6543/pushd?sslmode=verify-full&connect_timeout=4")
        #expect(configuration.parameters["host"] == "db.example")
        #expect(configuration.parameters["port"] == "6543")
        #expect(configuration.parameters["user"] == "app")
        #expect(configuration.parameters["password"] == "s3cr3t")
        #expect(configuration.parameters["sslmode"] == "verify-full")
        #expect(configuration.parameters["connect_timeout"] == "4")
        #expect(configuration.databaseName == "pushd")
        #expect(try StoreConfiguration(url: "host=localhost dbname=other").databaseName == "other")
    }

    @Test("the description for logs never contains the password")
    func redacted() throws {
        let configuration = try StoreConfiguration(url: "postgresql://app:s3cr3t@db.example:6543/pushd?sslmode=require")
        #expect(configuration.redactedDescription == "postgresql://app@db.example:6543/pushd?sslmode=require")
        #expect(!configuration.redactedDescription.contains("s3cr3t"))
        let tool = configuration.withDatabase("scratch").toolConnection()
        #expect(tool.password == "s3cr3t")
        #expect(!tool.connectionString.contains("s3cr3t"))
        #expect(tool.connectionString.contains("dbname='scratch'"))
    }

    @Test("a malformed URL is refused before connecting, without echoing its secret parts")
    func malformed() {
        let error = #expect(throws: StoreError.self) {
            try StoreConfiguration(url: "postgresql://app:pa%zzword@db.example/pushd")
        }
        guard case .invalidConfiguration(let message)? = error else {
            Issue.record("expected invalidConfiguration, got \(String(describing: error))")
            return
        }
        #expect(!message.contains("zzword"))
        #expect(error?.isRetryable == false)
        #expect(throws: StoreError.self) { try StoreConfiguration(url: "postgresql://h/db?no_such_option=1") }
        #expect(throws: StoreError.self) { try StoreConfiguration(url: "  ") }
    }

    @Test("--database-url wins over PUSHD_DATABASE_URL; with neither the error says how to give one")
    func resolution() throws {
        let environment = ["PUSHD_DATABASE_URL": "postgresql://env-host/envdb"]
        #expect(try StoreConfiguration.resolve(explicitURL: "postgresql://cli-host/clidb", environment: environment).databaseName == "clidb")
        #expect(try StoreConfiguration.resolve(explicitURL: nil, environment: environment).databaseName == "envdb")
        let error = #expect(throws: StoreError.self) { try StoreConfiguration.resolve(explicitURL: nil, environment: [:]) }
        #expect(error?.description.contains("PUSHD_DATABASE_URL") == true)
        #expect(error?.description.contains("--database-url") == true)
    }
}
