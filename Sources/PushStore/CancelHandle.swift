import CPostgreSQL
import Dispatch
import Synchronization

/// Cancels the statement a connection is running, from any thread (`PQcancel`).
///
/// A cancel request is only sent while a statement is in flight (`begin` … `end`), and `end`
/// waits for a cancel being sent to finish. The server drops a cancel that reaches an idle
/// session, so a late cancel can never hit the connection's next statement.
final class CancelHandle: Sendable {
    private struct State {
        /// Freed by `invalidate`; only ever used under the lock.
        var cancel: CancelPointer?
        var inFlight = false
        var requested = false
    }

    private let state: Mutex<State>

    /// Takes ownership of `PQgetCancel`'s result.
    init(_ cancel: OpaquePointer?) {
        state = Mutex(State(cancel: cancel.map(CancelPointer.init)))
    }

    func begin() {
        state.withLock { $0.inFlight = true; $0.requested = false }
    }

    /// Returns whether a cancel was requested while the statement ran.
    @discardableResult
    func end() -> Bool {
        state.withLock { state in
            state.inFlight = false
            return state.requested
        }
    }

    /// Asks the server to cancel the statement in flight, if any, from a background thread
    /// (it opens a short connection to the server; the caller may be a cooperative thread).
    func cancelInBackground() {
        DispatchQueue.global().async { [self] in
            state.withLock { state in
                guard state.inFlight, let cancel = state.cancel else { return }
                state.requested = true
                var buffer = [CChar](repeating: 0, count: 256)
                _ = PQcancel(cancel.pointer, &buffer, Int32(buffer.count))
            }
        }
    }

    /// Frees the libpq object; later cancels do nothing.
    func invalidate() {
        state.withLock { state in
            if let cancel = state.cancel { PQfreeCancel(cancel.pointer) }
            state.cancel = nil
            state.inFlight = false
        }
    }
}

/// A `PGcancel *`.
///
/// `@unchecked Sendable` is safe: the pointer is only stored inside `CancelHandle`'s mutex and
/// only used (`PQcancel`, `PQfreeCancel`) while holding it, so no two threads ever touch the
/// `PGcancel` at once; libpq documents `PQcancel` as safe to call from any thread, and a
/// `PGcancel` as independent of its connection.
struct CancelPointer: @unchecked Sendable {  // safe: see the proof above
    let pointer: OpaquePointer
}
