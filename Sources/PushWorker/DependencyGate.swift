import Synchronization

/// Open while the worker's dependencies (PostgreSQL) answer; closed during an outage.
///
/// While it is closed the worker takes no new jobs, and the jobs it holds wait for it to
/// open instead of going back to the queue: the deliveries a job spends waiting for a
/// dependency (counted against the queue's `x-delivery-limit`) do not grow with the length
/// of the outage, so an outage never dead-letters a job.
final class DependencyGate: Sendable {
    private struct State {
        var isOpen = true
        var nextWaiter = 0
        var openWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var closedWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Closes the gate; true if it was open (the caller then starts probing).
    func close() -> Bool {
        let waiters: [CheckedContinuation<Void, Never>]? = state.withLock { state in
            guard state.isOpen else { return nil }
            state.isOpen = false
            defer { state.closedWaiters = [:] }
            return Array(state.closedWaiters.values)
        }
        waiters?.forEach { $0.resume() }
        return waiters != nil
    }

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.openWaiters = [:] }
            return Array(state.openWaiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns once the gate is open, or the task is cancelled.
    func waitUntilOpen() async { await wait(forOpen: true) }

    /// Returns once the gate is closed, or the task is cancelled.
    func waitUntilClosed() async { await wait(forOpen: false) }

    private func wait(forOpen wanted: Bool) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.isOpen == wanted || Task.isCancelled { return true }
                    if wanted { state.openWaiters[id] = continuation } else { state.closedWaiters[id] = continuation }
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                state.openWaiters.removeValue(forKey: id) ?? state.closedWaiters.removeValue(forKey: id)
            }
            continuation?.resume()
        }
    }
}
