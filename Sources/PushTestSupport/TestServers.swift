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
