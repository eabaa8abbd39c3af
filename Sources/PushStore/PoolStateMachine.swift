/// The connection pool's bookkeeping, free of I/O and locks so it can be tested alone (the
/// postgres-nio way): each event returns what the caller must do — hand a connection to a
/// waiter, open or close one — and the caller does it after releasing its lock.
///
/// Invariant: `idle.count + leased + connecting <= maximumConnections`, and a waiter is only
/// queued while no connection is idle.
///
/// How the pool grows: with `growsAfterWaiting`, a caller that finds every connection busy
/// waits for one of them, and only a caller still waiting after the pool's growth delay
/// (`growIfStillWaiting`) opens one more, one at a time. A lookup on a busy connection is
/// usually over sooner than a new connection is open (a TCP handshake, TLS, a SCRAM exchange
/// of 4,096 PBKDF2 rounds on each side), and each connection the pool does not need is a
/// server process held and a SCRAM exchange spent (about 3 ms of the client's CPU here): a
/// worker's 32 jobs prefetched at start opened all four connections, on loopback where one
/// keeps up. Without it, every queued caller not covered by a connection being opened opens
/// one at once. Either way a broken connection is replaced at once while callers wait.
struct PoolStateMachine<Connection, Waiter> {
    let maximumConnections: Int
    let growsAfterWaiting: Bool
    private(set) var idle: [Connection] = []
    private(set) var leased = 0
    private(set) var connecting = 0
    /// Connections being closed; shutdown completes when none is left.
    private(set) var closing = 0
    /// In arrival order; `overdue` once the caller has waited the growth delay.
    private(set) var waiters: [(id: UInt64, waiter: Waiter, overdue: Bool)] = []
    private(set) var isShutDown = false
    /// Why the last attempt to open a connection failed; cleared by a success.
    private(set) var lastConnectError: String?

    init(maximumConnections: Int, growsAfterWaiting: Bool = false) {
        precondition(maximumConnections >= 1, "a pool needs at least one connection")
        self.maximumConnections = maximumConnections
        self.growsAfterWaiting = growsAfterWaiting
    }

    var isShutdownComplete: Bool {
        isShutDown && idle.isEmpty && leased == 0 && connecting == 0 && closing == 0
    }

    private var hasCapacity: Bool { idle.count + leased + connecting < maximumConnections }

    enum LeaseAction {
        /// Use this connection now (the waiter was not queued).
        case use(Connection)
        /// The waiter is queued; open a new connection first if asked.
        case wait(startConnecting: Bool)
        case fail(StoreError)
    }

    /// A caller wants a connection. Idle connections are reused last-in first-out, so the
    /// pool's busy set stays small and the rest can age out.
    mutating func lease(id: UInt64, waiter: Waiter) -> LeaseAction {
        guard !isShutDown else { return .fail(.poolClosed) }
        if let connection = idle.popLast() {
            leased += 1
            return .use(connection)
        }
        waiters.append((id, waiter, false))
        // Open one more only if the connections already being opened do not cover the queue
        // and, when growth waits, no connection is open or opening that will serve it.
        if hasCapacity, connecting < waiters.count, !growsAfterWaiting || leased + connecting == 0 {
            connecting += 1
            return .wait(startConnecting: true)
        }
        return .wait(startConnecting: false)
    }

    /// The caller `id` has waited the growth delay: true (and counted as connecting) if the
    /// pool should open one more connection for it now. It does if the caller still waits,
    /// there is room, and no other connection is being opened; otherwise the caller stays
    /// overdue, and `growForOverdueWaiters` opens one when the one being opened is done.
    mutating func growIfStillWaiting(id: UInt64) -> Bool {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return false }
        waiters[index].overdue = true
        return growForOverdueWaiters()
    }

    /// True (and counted as connecting) if an overdue caller still waits, there is room and
    /// nothing is being opened: asked again whenever an attempt to open one ends (opened, or
    /// given up because others cover the waiters).
    mutating func growForOverdueWaiters() -> Bool {
        guard growsAfterWaiting, !isShutDown, hasCapacity, connecting == 0, waiters.contains(where: \.overdue) else {
            return false
        }
        connecting += 1
        return true
    }

    enum ReleaseAction {
        case none
        case handOver(Connection, to: Waiter)
        /// Close this connection; open a replacement first if waiters need one.
        case close(Connection, startConnecting: Bool)
    }

    /// A leased connection comes back; `reusable` is false if it broke or was left in a
    /// transaction.
    mutating func release(_ connection: Connection, reusable: Bool) -> ReleaseAction {
        precondition(leased > 0, "release without lease")
        leased -= 1
        guard !isShutDown else {
            closing += 1
            return .close(connection, startConnecting: false)
        }
        guard reusable else {
            closing += 1
            let replace = !waiters.isEmpty && hasCapacity && connecting < waiters.count
            if replace { connecting += 1 }
            return .close(connection, startConnecting: replace)
        }
        if !waiters.isEmpty {
            let next = waiters.removeFirst()
            leased += 1
            return .handOver(connection, to: next.waiter)
        }
        idle.append(connection)
        return .none
    }

    enum ConnectedAction {
        case none
        case handOver(Connection, to: Waiter)
        case close(Connection)
    }

    mutating func connected(_ connection: Connection) -> ConnectedAction {
        precondition(connecting > 0, "connected without connecting")
        connecting -= 1
        lastConnectError = nil
        guard !isShutDown else {
            closing += 1
            return .close(connection)
        }
        if !waiters.isEmpty {
            let next = waiters.removeFirst()
            leased += 1
            return .handOver(connection, to: next.waiter)
        }
        idle.append(connection)
        return .none
    }

    /// An attempt to open a connection failed. Returns true if the caller should try again
    /// (after a backoff): someone is still waiting and the pool is running.
    mutating func connectFailed(_ reason: String) -> Bool {
        precondition(connecting > 0, "connect failure without connecting")
        lastConnectError = reason
        if !isShutDown, connecting <= waiters.count { return true }
        connecting -= 1
        return false
    }

    /// A waiter gave up (timeout or cancellation). Returns it if it was still queued.
    mutating func removeWaiter(id: UInt64) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index).waiter
    }

    /// A connection handed out to be closed has been closed.
    mutating func closed() {
        precondition(closing > 0, "closed without closing")
        closing -= 1
    }

    /// Idle connections to close and waiters to fail now; leased and connecting ones are
    /// closed as they come back.
    mutating func shutdown() -> (close: [Connection], fail: [Waiter]) {
        guard !isShutDown else { return ([], []) }
        isShutDown = true
        let toClose = idle
        idle.removeAll()
        closing += toClose.count
        let toFail = waiters.map(\.waiter)
        waiters.removeAll()
        return (toClose, toFail)
    }
}

extension PoolStateMachine: Sendable where Connection: Sendable, Waiter: Sendable {}
