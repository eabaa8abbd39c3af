import Foundation

/// Runs a program to completion with the given standard input and captures its output.
/// Through `Spawn`: files rather than pipes, so a daemon started by another test at the
/// same time cannot hold our output open. It waits for the process; it never sleeps.
public struct ChildProcess: Sendable {
    public struct Result: Sendable {
        public let status: Int32
        public let standardOutput: Data
        public let standardError: Data

        public var outputText: String { String(decoding: standardOutput, as: UTF8.self) }
        public var errorText: String { String(decoding: standardError, as: UTF8.self) }
    }

    /// Runs `executable` (a path, or a name looked up on PATH) with `arguments`. A child
    /// still running after `timeout` is killed (its status is then 137), so a hang fails the
    /// test that ran it instead of stalling the whole run.
    public static func run(
        _ executable: String, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil,
        timeout: Duration = .seconds(300)
    ) throws -> Result {
        let directory = try BuildProducts.temporaryDirectory("child")
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputFile = directory.appendingPathComponent("stdin")
        let outputFile = directory.appendingPathComponent("stdout")
        let errorFile = directory.appendingPathComponent("stderr")
        try input.write(to: inputFile)
        let pid = try Spawn.start(
            executable, arguments, environment: environment, input: inputFile.path, output: outputFile.path,
            errors: errorFile.path)
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(timeout.components.seconds * 1000)), execute: watchdog)
        let status = Spawn.waitBlocking(pid)
        watchdog.cancel()
        return Result(
            status: status, standardOutput: (try? Data(contentsOf: outputFile)) ?? Data(),
            standardError: (try? Data(contentsOf: errorFile)) ?? Data())
    }
}
