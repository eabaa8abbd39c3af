import Foundation

/// Runs a blocking call (a child process, a node start) on a thread of its own, so that it
/// never occupies one of the few threads of Swift's cooperative pool that other suites share.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}

/// Waits until `condition` holds, checking every 20 ms, for state that announces no event
/// (a connection's status). Returns false if it still does not hold after `timeout`.
func eventually(within timeout: Duration, _ condition: @Sendable () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(20))
    }
    return true
}
