import Foundation
import PushTestSupport

/// Runs a child process to completion on a thread of its own, so a test can wait for
/// `pg_ctl` or `pushd migrate` without occupying one of the cooperative pool's few threads
/// (this machine has two, shared with every suite running in parallel).
func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil
) async throws -> ChildProcess.Result {
    let result: Result<ChildProcess.Result, any Error> = await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(returning: Result { try ChildProcess.run(executable, arguments, environment: environment) })
        }
    }
    return try result.get()
}

/// Polls `condition` until it holds or `timeout` passes: waiting for a state, not a time.
func waitUntil(
    timeout: Duration = .seconds(20), _ what: String, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestSetupError("timed out after \(timeout) waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
