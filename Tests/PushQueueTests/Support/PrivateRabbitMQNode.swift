import Foundation
import PushQueue
import PushTestSupport

/// A RabbitMQ node of one test's own, for faults that must not touch the shared broker
/// other suites use at the same time (stopping the app) and for TLS.
///
/// Own node name, ports, Erlang cookie, data and logs under a temporary directory; loopback
/// only; user pushd/pushd. It runs `rabbitmq-server` as a child process from Debian's
/// `/usr/lib/rabbitmq/bin` (the `/usr/sbin` wrappers switch to the `rabbitmq` user), waits
/// for it with `rabbitmqctl wait`, and `stop()` halts it and deletes the directory.
final class PrivateRabbitMQNode: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let binaries = ProcessInfo.processInfo.environment["PUSHD_RABBITMQ_BIN"] ?? "/usr/lib/rabbitmq/bin"

    let nodeName: String
    let amqpPort: Int
    let tlsPort: Int?
    let directory: URL
    private let server = ServerHandle()

    var amqpURL: String { "amqp://pushd:pushd@127.0.0.1:\(amqpPort)/%2f" }
    var caFile: String { directory.appendingPathComponent("ca.pem").path }
    var otherCAFile: String { directory.appendingPathComponent("other-ca.pem").path }

    /// `amqps://` to `host` (the certificate names `localhost` only).
    /// The TLS listener with no `cacertfile`: the connection trusts the system's CA store,
    /// which does not hold the node's test CA.
    func amqpsURLTrustingTheSystem() -> String {
        "amqps://pushd:pushd@localhost:\(tlsPort ?? 0)/%2f"
    }

    func amqpsURL(host: String = "localhost", caFile: String? = nil) -> String {
        let ca = caFile ?? self.caFile
        return "amqps://pushd:pushd@\(host):\(tlsPort ?? 0)/%2f?cacertfile=\(ca.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ca)"
    }

    /// Starts a node and waits until it accepts connections (a few seconds).
    static func start(label: String, tls: Bool = false) throws -> PrivateRabbitMQNode {
        guard FileManager.default.isExecutableFile(atPath: "\(binaries)/rabbitmq-server") else {
            throw Failure(description: "\(binaries)/rabbitmq-server not found: install the rabbitmq-server package (Deploy/test.sh does)")
        }
        let directory = try BuildProducts.temporaryDirectory("rabbitmq-\(label)")
        let ports = try FreePorts.take(3)
        let node = PrivateRabbitMQNode(
            nodeName: "pushd-qt-\(String(UInt32.random(in: .min ... .max), radix: 16))@localhost",
            amqpPort: ports[0], tlsPort: tls ? ports[1] : nil, distributionPort: ports[2], directory: directory)
        do {
            if tls { try node.makeCertificates() }
            try node.writeConfiguration()
            try node.launch()
            let waited = try node.ctl(["wait", node.pidFile, "--timeout", "90"])
            guard waited.status == 0 else {
                throw Failure(description: "node \(node.nodeName) did not start: \(waited.errorText) \(node.serverLog)")
            }
        } catch {
            node.abandon()
            throw error
        }
        return node
    }

    private let distributionPort: Int

    private init(nodeName: String, amqpPort: Int, tlsPort: Int?, distributionPort: Int, directory: URL) {
        self.nodeName = nodeName
        self.amqpPort = amqpPort
        self.tlsPort = tlsPort
        self.distributionPort = distributionPort
        self.directory = directory
    }

    private var pidFile: String { directory.appendingPathComponent("node.pid").path }
    private var home: String { directory.appendingPathComponent("home").path }

    private var serverLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8))?.suffix(2000).description ?? ""
    }

    /// What both the server and the CLI need to find this node and nothing else.
    private var environment: [String: String] {
        [
            "HOME": home,
            "RABBITMQ_NODENAME": nodeName,
            "RABBITMQ_DIST_PORT": String(distributionPort),
            "RABBITMQ_MNESIA_BASE": directory.appendingPathComponent("mnesia").path,
            "RABBITMQ_LOG_BASE": directory.appendingPathComponent("log").path,
            "RABBITMQ_CONFIG_FILE": directory.appendingPathComponent("rabbitmq.conf").path,
            "RABBITMQ_ADVANCED_CONFIG_FILE": directory.appendingPathComponent("advanced.config").path,
            "RABBITMQ_ENABLED_PLUGINS_FILE": directory.appendingPathComponent("enabled_plugins").path,
            "RABBITMQ_CONF_ENV_FILE": directory.appendingPathComponent("rabbitmq-env.conf").path,
            "RABBITMQ_PID_FILE": pidFile,
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        ]
    }

    /// A connected connection to this node (plain AMQP), with the test defaults of
    /// `Broker.configuration` and whatever `configure` changes.
    func connect(
        _ name: String, topology: Topology? = nil, configure: (inout AMQPConfiguration) -> Void = { _ in }
    ) async throws -> AMQPConnection {
        var configuration = try Broker.configuration(name, url: amqpURL)
        configure(&configuration)
        return try await Broker.connect(name, configuration: configuration, topology: topology)
    }

    /// `rabbitmqctl -n <node> arguments…`.
    @discardableResult
    func ctl(_ arguments: [String]) throws -> ChildProcess.Result {
        try ChildProcess.run("\(Self.binaries)/rabbitmqctl", ["-n", nodeName] + arguments, environment: environment)
    }

    /// Stops the RabbitMQ application (connections are closed, the port stops listening);
    /// the Erlang node stays up.
    func stopApp() throws {
        let result = try ctl(["stop_app"])
        guard result.status == 0 else { throw Failure(description: "stop_app failed: \(result.errorText)") }
    }

    func startApp() throws {
        let result = try ctl(["start_app"])
        guard result.status == 0 else { throw Failure(description: "start_app failed: \(result.errorText)") }
    }

    /// The Erlang VM's process id, to freeze it (SIGSTOP) as a hung broker.
    func serverProcessID() throws -> pid_t {
        let text = try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let pid = pid_t(text) else { throw Failure(description: "no pid in \(pidFile)") }
        return pid
    }

    /// Halts the node, waits for the server process (killing it after 30 s), deletes its files.
    func stop() async {
        if let process = server.process {
            // Not `stop <pidfile>`: the node deletes its pid file on stop_app.
            _ = try? await onOwnThread { try self.ctl(["stop"]) }
            if await process.wait(timeout: .seconds(30)) == nil { process.kill9() }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// For a start that failed: kill whatever runs, delete the files.
    private func abandon() {
        server.process?.kill9()
        _ = try? ctl(["stop"])
        try? FileManager.default.removeItem(at: directory)
    }

    private func launch() throws {
        // Through PushTestSupport's `Spawn`: a clean signal mask (the script waits for the
        // Erlang VM and must see SIGCHLD), no inherited descriptors, output into a file.
        server.process = try SpawnedProcess(
            "\(Self.binaries)/rabbitmq-server", [], environment: environment,
            logFile: directory.appendingPathComponent("server.log"))
    }

    private func writeConfiguration() throws {
        let manager = FileManager.default
        for name in ["home", "mnesia", "log"] {
            try manager.createDirectory(at: directory.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        let cookie = (0..<20).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let cookieFile = directory.appendingPathComponent("home/.erlang.cookie").path
        guard manager.createFile(atPath: cookieFile, contents: Data(cookie.utf8), attributes: [.posixPermissions: 0o400]) else {
            throw Failure(description: "cannot write \(cookieFile)")
        }
        var lines = [
            "listeners.tcp.default = 127.0.0.1:\(amqpPort)",
            "default_user = pushd",
            "default_pass = pushd",
            "default_user_tags.administrator = true",
            "log.console = false",
            "log.file.level = warning",
            "disk_free_limit.absolute = 50MB",
        ]
        if let tlsPort {
            lines += [
                "listeners.ssl.default = 127.0.0.1:\(tlsPort)",
                "ssl_options.cacertfile = \(caFile)",
                "ssl_options.certfile = \(directory.appendingPathComponent("server.pem").path)",
                "ssl_options.keyfile = \(directory.appendingPathComponent("server.key").path)",
                "ssl_options.verify = verify_none",
                "ssl_options.fail_if_no_peer_cert = false",
            ]
        }
        try (lines.joined(separator: "\n") + "\n").write(to: directory.appendingPathComponent("rabbitmq.conf"), atomically: true, encoding: .utf8)
        try "[].\n".write(to: directory.appendingPathComponent("advanced.config"), atomically: true, encoding: .utf8)
        try "[].\n".write(to: directory.appendingPathComponent("enabled_plugins"), atomically: true, encoding: .utf8)
        try "".write(to: directory.appendingPathComponent("rabbitmq-env.conf"), atomically: true, encoding: .utf8)
    }

    /// A CA, a server certificate for `localhost` signed by it, and an unrelated CA.
    private func makeCertificates() throws {
        func openssl(_ arguments: [String]) throws {
            let result = try ChildProcess.run("openssl", arguments)
            guard result.status == 0 else { throw Failure(description: "openssl \(arguments.first ?? "") failed: \(result.errorText)") }
        }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + key + ["-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=pushd test CA"])
        try openssl(["req", "-x509"] + key + ["-keyout", path("other-ca.key"), "-out", path("other-ca.pem"), "-days", "2", "-subj", "/CN=pushd other CA"])
        try openssl(["req"] + key + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                     "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("server.ext")])
    }
}

/// Runs `body` with a fresh private node, started and stopped on threads of their own, and
/// stopped whether `body` succeeds or not.
func withPrivateNode<T: Sendable>(
    _ label: String, tls: Bool = false, _ body: (PrivateRabbitMQNode) async throws -> T
) async throws -> T {
    let node = try await onOwnThread { try PrivateRabbitMQNode.start(label: label, tls: tls) }
    let result: Result<T, any Error>
    do { result = .success(try await body(node)) } catch { result = .failure(error) }
    await node.stop()
    return try result.get()
}

/// Ports nothing listens on right now, from the kernel (bind to port 0), outside the range
/// RabbitMQ's CLI tools use for their own distribution.
enum FreePorts {
    static func take(_ count: Int) throws -> [Int] {
        var ports: [Int] = []
        while ports.count < count {
            let port = try one()
            if !(35672...35682).contains(port) && !ports.contains(port) { ports.append(port) }
        }
        return ports
    }

    private static func one() throws -> Int {
        try FreePort.find()
    }
}

/// The server process, set once at launch.
private final class ServerHandle: Sendable {
    private let value = NSLockedValue<SpawnedProcess?>(nil)

    var process: SpawnedProcess? {
        get { value.get() }
        set { value.set(newValue) }
    }
}
