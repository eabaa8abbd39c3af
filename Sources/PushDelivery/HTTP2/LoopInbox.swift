/// What other threads hand an HTTP loop thread, and whether that thread runs: the part of
/// the inbox both engines (`CurlMultiLoop`, `NativeHTTP2Loop`) share, always used under
/// the owning loop's lock.
///
/// The thread starts once (`claimThread`), never after `stop()`. A loop stopped before its
/// thread started has nobody to fail the waiting requests or free the loop's resources but
/// the caller of `stop()`, which `stop()` tells by returning the requests.
struct LoopInbox<Item> {
    /// Who owns the loop's resources: the thread while `.running`; whoever moved the state
    /// to `.neverStarted` or `.exited`, under the lock, afterwards.
    enum ThreadState {
        case notStarted, running, neverStarted, exited
    }

    var started: [Item] = []
    /// Requests whose senders gave up, handed over as themselves: the loop takes each out of
    /// what it holds directly, with no look-up by id.
    var cancelled: [Item] = []
    var stopping = false
    var thread = ThreadState.notStarted

    var isRunning: Bool {
        if case .running = thread { return true }
        return false
    }

    /// True exactly once, for the caller that starts the thread; false after `stop()`.
    mutating func claimThread() -> Bool {
        guard case .notStarted = thread, !stopping else { return false }
        thread = .running
        return true
    }

    /// Takes no new requests. If no thread ever started, returns the requests waiting, for
    /// the caller to fail (it now owns the loop's resources); nil when a thread runs or ran.
    mutating func stop() -> [Item]? {
        stopping = true
        guard case .notStarted = thread else { return nil }
        thread = .neverStarted
        defer { started = [] }
        return started
    }

    /// For the loop thread: what arrived since the last call, moved out (not copied, so the
    /// lock is held for a few moves).
    mutating func take() -> (started: [Item], cancelled: [Item], stopping: Bool) {
        defer {
            started = []
            cancelled = []
        }
        return (started, cancelled, stopping)
    }
}
