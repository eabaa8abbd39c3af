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
public final class PushdProcess: @unchecked Sendable {
    // `@unchecked Sendable`: immutable after init; Process may be signalled from any thread.
    public let process: Process
    public let logFile: URL

    public init(_ arguments: [String], environment: [String: String], logFile: URL) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: BuildProducts.pushd)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        self.logFile = logFile
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logFile)
        handle.seekToEndOfFile()
        process.standardError = handle
        process.standardOutput = handle
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public var isRunning: Bool { process.isRunning }

    public func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Sends SIGTERM and waits up to `timeout`; returns the exit status, or nil if it did
    /// not exit in time (it is then killed).
    public func terminate(timeout: Duration) async -> Int32? {
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            kill9()
            return nil
        }
        return process.terminationStatus
    }

    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }
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
