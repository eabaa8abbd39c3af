import Foundation
import PushTestSupport

/// What a tool run by `runTool` did.
struct ToolResult: Sendable {
    let status: Int32
    let output: String
    let errors: String
}

/// Runs a program to completion on a thread of its own (never one of the cooperative pool's
/// few threads), through `PushTestSupport.ChildProcess`: files for output, every other
/// descriptor closed, a clean signal mask (see `Spawn`).
func runTool(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> ToolResult {
    let result: Result<ChildProcess.Result, any Error> = await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(returning: Result { try ChildProcess.run(executable, arguments, environment: environment) })
        }
    }
    let finished = try result.get()
    return ToolResult(status: finished.status, output: finished.outputText, errors: finished.errorText)
}
