import Foundation

/// The PostgreSQL and RabbitMQ the integration tests talk to, from the environment that
/// `Deploy/test.sh` sets up (`Deploy/local/services.sh env`). Missing settings fail the
/// test with instructions; they are never a reason to skip.
public enum TestServers {
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    public static func databaseURL() throws -> String {
        try value("PUSHD_DATABASE_URL")
    }

    public static func amqpURL() throws -> String {
        try value("PUSHD_AMQP_URL")
    }

    private static func value(_ name: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw Missing(description: "\(name) is not set: run the tests with `bash Deploy/test.sh`, or `eval \"$(Deploy/local/services.sh env)\"` first")
        }
        return value
    }

    /// `rabbitmqctl` against the test node (`PUSHD_RABBITMQCTL`, from `services.sh env`), for
    /// policies scoped to a test's own queues and for checking what a test left behind.
    /// Never for anything node-wide.
    @discardableResult
    public static func rabbitmqctl(_ arguments: [String]) throws -> ChildProcess.Result {
        let command = try value("PUSHD_RABBITMQCTL")
        let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }.joined(separator: " ")
        let result = try ChildProcess.run("/bin/sh", ["-c", "\(command) \(quoted)"])
        guard result.status == 0 else {
            throw Missing(description: "rabbitmqctl \(arguments.first ?? "") failed: \(result.errorText)\(result.outputText)")
        }
        return result
    }

    /// The names of every queue on the test node's default virtual host.
    public static func queueNames() throws -> [String] {
        try rabbitmqctl(["list_queues", "--silent", "--no-table-headers", "name"]).outputText
            .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Has the broker close every connection whose client named itself `connectionName`
    /// (`AMQPConfiguration.connectionName`), as a broker restart or an operator would: the
    /// way tests cut a live connection without a hook in the shipped client. Returns how
    /// many it closed.
    @discardableResult
    public static func closeBrokerConnections(named connectionName: String) throws -> Int {
        // One line a connection: `<node.pid>`, a tab, the client properties as Erlang terms,
        // among them {"connection_name","…"}.
        let listing = try rabbitmqctl(["list_connections", "--silent", "--no-table-headers", "pid", "client_properties"])
        let marker = #"{"connection_name",""# + connectionName + #""}"#
        let processes = listing.outputText.split(whereSeparator: \.isNewline).compactMap { line -> String? in
            let fields = line.split(separator: "\t", maxSplits: 1)
            return fields.count == 2 && fields[1].contains(marker) ? String(fields[0]) : nil
        }
        for process in processes {
            try rabbitmqctl(["close_connection", process, "closed by a test"])
        }
        return processes.count
    }

    /// A name no other test uses, for topology prefixes, recipients and apps.
    public static func uniqueName(_ label: String) -> String {
        "\(label)-\(UUID().uuidString.prefix(8).lowercased())"
    }
}

/// A `pushd` subprocess (worker or cleanup) with its logs in a file.
public final class PushdProcess: Sendable {
    public let process: SpawnedProcess

    public init(_ arguments: [String], environment: [String: String], logFile: URL) throws {
        process = try SpawnedProcess(BuildProducts.pushd, arguments, environment: environment, logFile: logFile)
    }

    public var isRunning: Bool { process.isRunning }
    public var log: String { process.log }
    public func kill9() { process.kill9() }

    /// Sends SIGTERM and waits up to `timeout`; returns the exit status, or nil if it did
    /// not exit in time (it is then killed).
    public func terminate(timeout: Duration) async -> Int32? {
        await process.terminate(timeout: timeout)
    }
}

/// Polls `condition` until it holds or `timeout` passes: for waiting on real events in
/// other processes (never a fixed sleep).
public func waitUntil(
    timeout: Duration, every interval: Duration = .milliseconds(100), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}
