import Foundation
import PushCrypto
import PushQueue
import PushStore
import PushTestSupport
import PushWorker
import Testing

/// The example configuration shipped in `Deploy/` parses with pushd's own reader, as each
/// deployment combines it: the JSON file alone, the file plus systemd's environment file, and
/// Kubernetes' ConfigMap plus the Secret its comment tells operators to create. Secret files
/// the examples point at (`/etc/pushd/secrets/…`) are generated into a temporary directory,
/// so a real problem (a wrong type, a bad URL, a missing setting) is not hidden behind
/// "file not found". No servers.
@Suite("Deploy/ example configuration parses")
struct DeployConfigurationTests {
    static let deploy = BuildProducts.repositoryRoot.appendingPathComponent("Deploy")

    static func text(_ path: String) throws -> String {
        try String(contentsOf: deploy.appendingPathComponent(path), encoding: .utf8)
    }

    /// Writes every `/etc/pushd/secrets/NAME` the text mentions into `directory` (a P-256
    /// `.p8` for APNs, a service-account JSON named after its project for FCM) and returns the
    /// text pointing there.
    static func withSecrets(_ text: String, in directory: URL) throws -> String {
        let names = Set(text.matches(of: /\/etc\/pushd\/secrets\/([A-Za-z0-9_.-]+)/).map { String($0.output.1) })
        for name in names {
            let file = directory.appendingPathComponent(name)
            if name.hasSuffix(".p8") {
                try TestKeyMaterial.p256PrivateKeyPEM().write(to: file, atomically: true, encoding: .utf8)
            } else {
                let project = String(name.dropLast(".json".count))
                let account: [String: Any] = [
                    "type": "service_account", "project_id": project, "client_email": "pushd@\(project).iam.gserviceaccount.com",
                    "private_key": try DevicePrivateKey.generate().pkcs8PEM,
                ]
                try JSONSerialization.data(withJSONObject: account).write(to: file)
            }
        }
        return text.replacingOccurrences(of: "/etc/pushd/secrets/", with: directory.path + "/")
    }

    /// The configuration file a deployment would install: `text` with its secrets generated
    /// beside it, in a private directory the caller removes.
    static func configurationFile(_ text: String, in directory: URL) throws -> String {
        let file = directory.appendingPathComponent("pushd.json")
        try withSecrets(text, in: directory).write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// Every broker of the configuration parses as an AMQP URL (one URL, or the
    /// comma-separated list the several-broker failover accepts).
    static func expectBrokersParse(_ configuration: WorkerConfiguration, count: Int, _ place: String) {
        let urls = configuration.amqpURL.split(separator: ",").map(String.init)
        #expect(urls.count == count, "\(place): \(urls.count) broker URLs")
        for url in urls {
            #expect(throws: Never.self, "\(place): \(url)") { try AMQPConfiguration(url: url, environment: [:]) }
        }
        #expect(throws: Never.self, "\(place): database_url") { try StoreConfiguration(url: configuration.databaseURL) }
    }

    /// KEY=VALUE lines, as systemd's EnvironmentFile= reads them (comments and blanks skipped).
    static func environmentFile(_ text: String) -> [String: String] {
        var environment: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return environment
    }

    @Test("config/pushd.example.json alone: every setting read, no problem")
    func exampleFile() throws {
        let directory = try BuildProducts.temporaryDirectory("deploy-config")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.configurationFile(try Self.text("config/pushd.example.json"), in: directory)
        let configuration = try WorkerConfiguration.load(file: path, environment: ["PUSHD_APNS_KEY_OTHER_TEAM": try TestKeyMaterial.p256PrivateKeyPEM()])
        #expect(configuration.declareTopology == false)
        #expect(configuration.prefetch == 32 && configuration.metricsPort == 9464)
        #expect(configuration.bulkPrefetch == 4 && configuration.chunkSize == 500 && configuration.bulkMaxInFlightDeliveries == 100)
        #expect(configuration.apns.count == 2 && configuration.fcm.count == 2)
        #expect(configuration.retryTiers.map(\.name) == ["5s", "30s", "2m", "10m", "1h"])
        Self.expectBrokersParse(configuration, count: 1, "pushd.example.json")
    }

    @Test("systemd: the example file plus systemd/pushd.env.example, as pushd-worker@.service combines them")
    func systemd() throws {
        let unit = try Self.text("systemd/pushd-worker@.service")
        #expect(unit.contains("--config /etc/pushd/pushd.json") && unit.contains("EnvironmentFile=/etc/pushd/pushd.env"))
        let directory = try BuildProducts.temporaryDirectory("deploy-systemd")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.configurationFile(try Self.text("config/pushd.example.json"), in: directory)
        var environment = Self.environmentFile(try Self.text("systemd/pushd.env.example"))
        environment["PUSHD_APNS_KEY_OTHER_TEAM"] = try TestKeyMaterial.p256PrivateKeyPEM()
        let configuration = try WorkerConfiguration.load(file: path, environment: environment)
        #expect(configuration.amqpURL == environment["PUSHD_AMQP_URL"], "the environment wins over the file")
        Self.expectBrokersParse(configuration, count: 3, "pushd.env.example")
    }

    @Test("Kubernetes: the ConfigMap's pushd.json plus the Secret described in kubernetes/pushd.yaml")
    func kubernetes() throws {
        let manifest = try Self.text("kubernetes/pushd.yaml")
        // The ConfigMap's `pushd.json: |` block: the lines indented deeper than its key.
        let lines = manifest.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.contains("pushd.json: |") }, "no pushd.json in the ConfigMap")
        let keyIndent = lines[start].prefix { $0 == " " }.count
        let block = lines[(start + 1)...].prefix { $0.prefix { $0 == " " }.count > keyIndent || $0.isEmpty }
        let json = block.map { String($0.dropFirst(min(keyIndent + 2, $0.count))) }.joined(separator: "\n")
        // The Secret, from the comment's `--from-literal=KEY='VALUE'` lines ("…" is the password).
        var environment: [String: String] = [:]
        for match in manifest.matches(of: /--from-literal=([A-Z_]+)='([^']*)'/) {
            environment[String(match.output.1)] = String(match.output.2).replacingOccurrences(of: "…", with: "secret")
        }
        #expect(environment["PUSHD_AMQP_URL"] != nil && environment["PUSHD_DATABASE_URL"] != nil)
        let directory = try BuildProducts.temporaryDirectory("deploy-kubernetes")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try WorkerConfiguration.load(file: try Self.configurationFile(json, in: directory), environment: environment)
        #expect(configuration.declareTopology == false && configuration.metricsPort == 9464)
        Self.expectBrokersParse(configuration, count: 3, "pushd.yaml")
    }
}
