import Synchronization

/// Counting semaphore for tasks: `acquire` suspends (never blocks a thread) until a permit
/// is free. Used to bound in-flight work (HTTP/2 requests, encryptions per job).
/// Waiters are served first come, first served; a cancelled waiter gives up its place.
///
/// Waiters hold unsafe continuations (a checked one allocates a tracking object, and a busy
/// semaphore suspends a task per permit). Each is resumed exactly once: by `acquire` itself
/// when a permit is free or the task is already cancelled (it was never queued), or by
/// whoever takes it out of `waiters` under the lock (`release`, the cancellation handler).
public final class AsyncSemaphore: Sendable {
    private struct State {
        var available: Int
        var waiters = FIFOQueue<(id: UInt64, continuation: UnsafeContinuation<Bool, Never>)>()
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    public init(permits: Int) {
        precondition(permits > 0, "a semaphore needs at least one permit")
        state = Mutex(State(available: permits))
    }

    /// Waits for a permit. Throws `CancellationError` if the task is cancelled first.
    public nonisolated(nonsending) func acquire() async throws(CancellationError) {
        if state.withLock({ state -> Bool in
            guard state.available > 0, state.waiters.isEmpty else { return false }
            state.available -= 1
            return true
        }) { return }
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        let granted = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
                let immediate = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.available > 0 && state.waiters.isEmpty {
                        state.available -= 1
                        return true
                    }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { state in state.waiters.remove(firstWhere: { $0.id == id })?.continuation }
            waiter?.resume(returning: false)
        }
        if !granted { throw CancellationError() }
    }

    /// The tasks waiting for a permit now.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns a permit, waking the longest waiter if any.
    public func release() {
        let waiter = state.withLock { state -> UnsafeContinuation<Bool, Never>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()?.continuation
        }
        waiter?.resume(returning: true)
    }
}
