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
