import Foundation
import PushStore
import PushTestSupport

/// A PostgreSQL server of the test's own (initdb + pg_ctl in a temporary directory, a free
/// port on 127.0.0.1, trust authentication on loopback), so a test can restart or stop the
/// server without touching the shared one other suites are using. As root the server runs
/// as the `postgres` OS user, as PostgreSQL requires.
final class PrivatePostgres: Sendable {
    let root: URL
    let port: Int
    private let binDirectory: String
    private let runAsPostgresUser: Bool

    private var dataDirectory: String { root.appendingPathComponent("data").path }
    private var logFile: String { root.appendingPathComponent("postgres.log").path }

    private init(root: URL, port: Int, binDirectory: String, runAsPostgresUser: Bool) {
        self.root = root
        self.port = port
        self.binDirectory = binDirectory
        self.runAsPostgresUser = runAsPostgresUser
    }

    /// initdb and start. The caller must `destroy()` it.
    static func start() async throws -> PrivatePostgres {
        let binDirectory = try Self.binDirectory()
        let asRoot = getuid() == 0
        let root = URL(fileURLWithPath: "/tmp/pushd-pg-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        if asRoot { try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: root.path) }
        let server = PrivatePostgres(root: root, port: try freePort(), binDirectory: binDirectory, runAsPostgresUser: asRoot)
        do {
            try await server.pg("initdb", ["-D", server.dataDirectory, "-U", "pushd", "-A", "trust", "-E", "UTF8",
                                           "--locale=C.UTF-8", "--no-instructions", "-N"])
            try await server.pg("pg_ctl", ["-D", server.dataDirectory, "-l", server.logFile, "-w", "-t", "60", "-o",
                                           "-c listen_addresses=127.0.0.1 -c port=\(server.port) -c unix_socket_directories=\(root.path) -c max_connections=30",
                                           "start"])
        } catch {
            await server.destroy()
            throw error
        }
        return server
    }

    var configuration: StoreConfiguration {
        get throws {
            var configuration = try StoreConfiguration(url: "postgresql://pushd@127.0.0.1:\(port)/postgres")
            configuration.applicationName = "pushd-private-pg-test"
            return configuration
        }
    }

    /// `pg_ctl restart -m fast`: sessions are terminated (in-flight statements get 57P01),
    /// a shutdown checkpoint is written, the server comes back on the same port.
    func restart() async throws {
        try await pg("pg_ctl", ["-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-m", "fast", "restart"])
    }

    func stop() async throws {
        try await pg("pg_ctl", ["-D", dataDirectory, "-w", "-t", "60", "-m", "fast", "stop"])
    }

    /// Starts it again after `stop()`, with the options it was first started with.
    func startAgain() async throws {
        let options = "-c listen_addresses=127.0.0.1 -c port=\(port) -c unix_socket_directories=\(root.path) -c max_connections=30"
        try await pg("pg_ctl", ["-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-o", options, "start"])
    }

    /// Stops the server (immediately) and deletes its files.
    func destroy() async {
        _ = try? await pg("pg_ctl", ["-D", dataDirectory, "-w", "-t", "60", "-m", "immediate", "stop"])
        try? FileManager.default.removeItem(at: root)
    }

    private func pg(_ tool: String, _ arguments: [String]) async throws {
        let path = "\(binDirectory)/\(tool)"
        let result = runAsPostgresUser
            ? try await runTool("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments)
            : try await runTool(path, arguments)
        guard result.status == 0 else {
            let log = (try? String(contentsOfFile: logFile, encoding: .utf8)).map { String($0.suffix(2000)) } ?? ""
            throw TestSetupError("\(tool) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.errors)\(result.output)\n\(log)")
        }
    }

    private static func binDirectory() throws -> String {
        if let bin = ProcessInfo.processInfo.environment["PUSHD_PG_BIN"], !bin.isEmpty { return bin }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let newest = versions.compactMap(Int.init).max() else {
            throw TestSetupError("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin): install postgresql or set PUSHD_PG_BIN")
        }
        return "/usr/lib/postgresql/\(newest)/bin"
    }

    /// A port nothing listens on right now.
    private static func freePort() throws -> Int {
        try FreePort.find()
    }
}
