@testable import PushWorker
import PushRuntime
import PushStore
import Testing

@Suite("Safe transport defaults")
struct TransportSafetyTests {
    static func problems(_ environment: [String: String]) -> [String] {
        var base = ["PUSHD_AMQP_URL": "amqp://u:p@127.0.0.1:5672/%2f", "PUSHD_DATABASE_URL": "postgresql://u:p@127.0.0.1:5432/pushd"]
        base.merge(environment) { $1 }
        do {
            _ = try WorkerConfiguration.load(file: nil, environment: base, needsDelivery: false)
            return []
        } catch {
            return error.problems
        }
    }

    @Test("loopback in clear text is fine")
    func loopback() {
        #expect(Self.problems([:]).isEmpty)
        #expect(Self.problems(["PUSHD_AMQP_URL": "amqp://u:p@localhost/%2f", "PUSHD_DATABASE_URL": "postgresql://u@[::1]/db"]).isEmpty)
        #expect(Self.problems(["PUSHD_DATABASE_URL": "host=/var/run/postgresql dbname=pushd"]).isEmpty)
    }

    @Test("amqp:// or PostgreSQL without TLS to a remote host is refused unless allow_insecure_transport")
    func remoteClearText() {
        let amqp = Self.problems(["PUSHD_AMQP_URL": "amqp://u:p@rabbit.internal/%2f"])
        #expect(amqp.count == 1 && amqp[0].contains("amqp_url") && !amqp[0].contains(":p@"))
        let postgres = Self.problems(["PUSHD_DATABASE_URL": "postgresql://u:secret@db.internal/pushd?sslmode=prefer"])
        #expect(postgres.count == 1 && postgres[0].contains("database_url") && !postgres[0].contains("secret"))
        #expect(Self.problems(["PUSHD_AMQP_URL": "amqp://u:p@127.0.0.1/%2f,amqp://u:p@10.0.0.2/%2f"]).count == 1, "every broker counts")
        #expect(Self.problems([
            "PUSHD_AMQP_URL": "amqp://u:p@rabbit.internal/%2f", "PUSHD_DATABASE_URL": "postgresql://u@db.internal/pushd",
            "PUSHD_ALLOW_INSECURE_TRANSPORT": "true",
        ]).isEmpty)
        #expect(Self.problems([
            "PUSHD_AMQP_URL": "amqps://u:p@rabbit.internal/%2f", "PUSHD_DATABASE_URL": "postgresql://u@db.internal/pushd?sslmode=verify-full",
        ]).isEmpty)
    }

    @Test("PostgreSQL to a remote host needs sslmode=verify-full: require checks no certificate, verify-ca no host name")
    func postgresVerifyFull() throws {
        for mode in ["disable", "allow", "prefer", "require", "verify-ca"] {
            let problems = Self.problems(["PUSHD_DATABASE_URL": "postgresql://u:secret@db.internal/pushd?sslmode=\(mode)"])
            #expect(problems.count == 1 && problems[0].contains("sslmode=\(mode)"), "\(mode): \(problems)")
        }
        // libpq connects to hostaddr when given; PG* variables fill what the URL leaves out.
        let viaAddress = try StoreConfiguration(url: "postgresql://u@localhost/pushd?hostaddr=10.0.0.5")
        #expect(viaAddress.insecureTransportProblem(environment: [:])?.contains("10.0.0.5") == true)
        let socketOnly = try StoreConfiguration(url: "postgresql:///pushd")
        #expect(socketOnly.insecureTransportProblem(environment: [:]) == nil)
        #expect(socketOnly.insecureTransportProblem(environment: ["PGHOST": "db.internal"])?.contains("db.internal") == true)
        #expect(socketOnly.insecureTransportProblem(environment: ["PGHOST": "db.internal", "PGSSLMODE": "verify-full"]) == nil)
        #expect(socketOnly.insecureTransportProblem(environment: ["PGHOST": "/var/run/postgresql"]) == nil)
    }

    @Test("APNs, FCM and OAuth URLs must be https")
    func https() {
        #expect(WorkerConfiguration.isHTTPS("https://127.0.0.1:8443"))
        #expect(!WorkerConfiguration.isHTTPS("http://api.push.apple.com"))
        #expect(!WorkerConfiguration.isHTTPS("https://"))
        #expect(!WorkerConfiguration.isHTTPS("api.push.apple.com"))
    }

    @Test("a URL is redacted as the parser reads it: a password with @ or / is never half shown")
    func redaction() {
        #expect(Redact.url("amqp://user:p@ss@host/vh") == "amqp://user:***@host/vh")
        #expect(Redact.url("amqp://user:a/b@host") == "amqp://user:***@host")
        #expect(Redact.url("amqp://host/vh") == "amqp://host/vh")
    }
}
