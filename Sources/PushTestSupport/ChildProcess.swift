import Foundation

/// Runs a program to completion with the given standard input and captures its output.
/// For tests and tooling: it waits for the process, it never sleeps.
public struct ChildProcess: Sendable {
    public struct Result: Sendable {
        public let status: Int32
        public let standardOutput: Data
        public let standardError: Data

        public var outputText: String { String(decoding: standardOutput, as: UTF8.self) }
        public var errorText: String { String(decoding: standardError, as: UTF8.self) }
    }

    public enum Failure: Error, CustomStringConvertible {
        case cannotStart(String, String)

        public var description: String {
            switch self {
            case .cannotStart(let path, let why): return "cannot start \(path): \(why)"
            }
        }
    }

    /// Runs `executable` (a path, or a name looked up on PATH) with `arguments`.
    public static func run(
        _ executable: String, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil
    ) throws -> Result {
        let process = Process()
        if executable.contains("/") {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [executable] + arguments
        }
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        do { try process.run() } catch { throw Failure.cannotStart(executable, "\(error)") }
        // Drain both pipes on their own threads so a chatty child cannot block on a full pipe.
        let output = DrainedPipe(stdout), errors = DrainedPipe(stderr)
        stdin.fileHandleForWriting.write(input)
        try? stdin.fileHandleForWriting.close()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, standardOutput: output.wait(), standardError: errors.wait())
    }
}

/// Reads a pipe to its end on a background thread.
private final class DrainedPipe: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let box = DataBox()

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        let box = self.box, done = self.done
        Thread.detachNewThread {
            box.set(handle.readDataToEndOfFile())
            done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return box.get()
    }
}

/// The one value handed from the reading thread to the waiting one. The semaphore orders
/// the write before the read; the lock makes that visible to the checker too.
private final class DataBox: Sendable {
    private let storage = NSLockedValue(Data())
    func set(_ data: Data) { storage.set(data) }
    func get() -> Data { storage.get() }
}
