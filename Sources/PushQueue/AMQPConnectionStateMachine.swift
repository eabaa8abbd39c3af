import PushRuntime

/// The connection's lifecycle, consumers and waiters, free of I/O, threads and clocks, so
/// that reconnecting, failing over and closing can be tested without a broker (the
/// postgres-nio way, like `PoolStateMachine`). The connection thread feeds it events — a
/// connect succeeded or failed, the connection was lost, a caller asked for something, the
/// broker confirmed — and carries out what each returns: connect to this endpoint and
/// resume these consumers, wait this long, resume these waiters, end these consumers.
///
/// Endpoints are tried round robin: every failed attempt and every lost connection moves
/// on to the next one, and the backoff grows once per full cycle through the list, so a
/// cluster with one dead node costs a reconnect no more than the jittered base delay. A
/// first connect gives up only once every endpoint has refused in a way retrying cannot
/// fix (with one endpoint: at its first such refusal, as it always did).
///
/// Generic over what it hands back (connect waiters, consumer streams, confirm waiters) so
/// that tests can use plain values.
struct AMQPConnectionStateMachine<Waiter, Consumer, ConfirmWaiter> {
    enum Phase: Equatable {
        /// Created; `start` not called yet.
        case idle
        /// Opening a connection to `endpoints[endpoint]`.
        case connecting(endpoint: Int)
        case connected(endpoint: Int)
        /// Waiting out the backoff; the next attempt goes to `endpoints[endpoint]` at `at`.
        case reconnecting(endpoint: Int, at: ContinuousClock.Instant)
        /// `close()` was called while connected: consumers are stopped, outstanding confirms
        /// get until `deadline`.
        case closing(endpoint: Int, deadline: ContinuousClock.Instant)
        /// Closed, or given up for good (`terminalError`).
        case finished
    }

    /// A consumer as the connection remembers it across reconnects.
    struct ConsumerRecord {
        let id: UInt64
        let queue: String
        let tag: String
        let prefetch: UInt16
        let consumer: Consumer
        /// Whether `basic.consume` is in effect on the current channel.
        var active: Bool
    }

    /// What `basic.consume` needs, for a consumer to start or resume.
    struct ConsumerSpec: Equatable {
        let id: UInt64
        let queue: String
        let tag: String
        let prefetch: UInt16
    }

    /// Open a connection to `endpoints[endpoint]`, declare the topology, then resume these
    /// consumers (in the order they were created); report `connectSucceeded` or
    /// `connectFailed`.
    struct Connect: Equatable {
        let endpoint: Int
        let consumers: [ConsumerSpec]
    }

    typealias Resolution = ConfirmTracker<ConfirmWaiter>.Resolution

    /// The connection has stopped for good: answer everyone still waiting.
    struct Finish {
        /// Why it gave up; nil after `close()`.
        let error: QueueError?
        /// To fail with `error ?? .closed`.
        let connectWaiters: [Waiter]
        /// To end: with `error` if given, else normally.
        let consumers: [Consumer]
        /// Publishes whose confirm will never come.
        let confirms: [Resolution]
    }

    /// What to do after a failed attempt or a lost connection.
    struct Failure {
        let error: QueueError
        /// Publishes of the dead channel: their outcome is unknown.
        let confirms: [Resolution]
        /// A consumer whose queue is gone (404 on resuming it), to end with the error.
        let removedConsumer: Consumer?
        /// The answer to publishes and settlements posted from now on.
        let refusal: QueueError
        let next: Next
    }

    enum Next {
        /// Try `endpoints[endpoint]` after `delay` (`reconnectDue` then says when).
        case reconnect(endpoint: Int, delay: Duration, attempt: Int)
        case finish(Finish)
    }

    enum CloseAction {
        /// Already closing or closed: wait for the end.
        case none
        /// Not connected: the connection is finished right away.
        case finish(Finish)
        /// Connected: stop these consumers now, then keep serving until `closeDue`.
        case drain(consumers: [UInt64])
    }

    let endpoints: [AMQPEndpoint]
    let backoff: Backoff
    private(set) var phase: Phase = .idle
    /// What `AMQPConnection.status` shows; updated with every event.
    private(set) var status = ConnectionStatus()
    /// Why the connection gave up for good (a first connect that cannot succeed).
    private(set) var terminalError: QueueError?
    private(set) var hasConnected = false
    /// Failed attempts and lost connections since the last successful connect.
    private(set) var consecutiveFailures = 0
    /// Before the first connect: whether each endpoint's last attempt failed in a way
    /// retrying cannot fix (credentials, TLS, topology). The connection gives up once all
    /// have; while any endpoint may still come up, it keeps trying.
    private var refusedForGood: [Bool]
    var consumers: [UInt64: ConsumerRecord] = [:]
    /// Written only by this file and its `+Consumers` / `+Waiters` extensions.
    var consumerIDsByTag: [String: UInt64] = [:]
    var nextConsumerID: UInt64 = 0
    var connectWaiters: [UInt64: Waiter] = [:]
    /// Publishes awaiting their confirm on the current channel.
    var confirms: ConfirmTracker<ConfirmWaiter>

    init(endpoints: [AMQPEndpoint], backoff: Backoff, confirmTimeout: Duration) {
        precondition(!endpoints.isEmpty, "a connection needs at least one endpoint")
        self.endpoints = endpoints
        self.refusedForGood = Array(repeating: false, count: endpoints.count)
        self.backoff = backoff
        self.confirms = ConfirmTracker(timeout: confirmTimeout)
    }

    var isFinished: Bool { phase == .finished }

    /// Connected (also while closing): the connection can be used.
    var isConnected: Bool {
        switch phase {
        case .connected, .closing: true
        default: false
        }
    }

    /// The endpoint connected to, being tried, or to be tried next.
    var currentEndpoint: Int? {
        switch phase {
        case .connecting(let endpoint), .connected(let endpoint), .reconnecting(let endpoint, _), .closing(let endpoint, _):
            endpoint
        case .idle, .finished:
            nil
        }
    }

    // MARK: Lifecycle

    /// `start()`: the first attempt goes to the first endpoint. Nil if already started.
    mutating func start() -> Connect? {
        guard phase == .idle else { return nil }
        return connect(to: 0)
    }

    /// The backoff is over: try the next endpoint. Nil if it is not time yet.
    mutating func reconnectDue(now: ContinuousClock.Instant) -> Connect? {
        guard case .reconnecting(let endpoint, let at) = phase, now >= at else { return nil }
        return connect(to: endpoint)
    }

    private mutating func connect(to endpoint: Int) -> Connect {
        phase = .connecting(endpoint: endpoint)
        status.state = .connecting
        status.endpoint = endpoints[endpoint].description
        let specs = consumers.keys.sorted().compactMap { id in
            consumers[id].map { ConsumerSpec(id: $0.id, queue: $0.queue, tag: $0.tag, prefetch: $0.prefetch) }
        }
        return Connect(endpoint: endpoint, consumers: specs)
    }

    /// The connection is open, the topology declared and every consumer resumed. Returns
    /// the connect waiters to resume.
    mutating func connectSucceeded(now: ContinuousClock.Instant) -> [Waiter] {
        guard case .connecting(let endpoint) = phase else { preconditionFailure("connectSucceeded while \(phase)") }
        phase = .connected(endpoint: endpoint)
        let reconnected = hasConnected
        hasConnected = true
        consecutiveFailures = 0
        for id in consumers.keys { consumers[id]?.active = true }
        status.state = .connected
        status.failedAttempts = 0
        status.connectedSince = now
        status.blockedReason = nil
        if reconnected { status.reconnects += 1 }
        return takeConnectWaiters()
    }

    /// The attempt failed. `consumerGone` names a consumer whose queue no longer exists
    /// (404 on resuming it): it is ended, the others are resumed on the next attempt.
    /// `jitter` (0...1) scales the backoff, as `Backoff.delay` does.
    mutating func connectFailed(
        _ error: QueueError, consumerGone: UInt64? = nil, now: ContinuousClock.Instant, jitter: Double
    ) -> Failure {
        guard case .connecting(let endpoint) = phase else { preconditionFailure("connectFailed while \(phase)") }
        let removed = consumerGone.flatMap { removeConsumer($0) }
        return failed(error, endpoint: endpoint, removedConsumer: removed, closing: false, now: now, jitter: jitter)
    }

    /// The connection in use failed (socket, heartbeats, a broker close).
    mutating func connectionLost(_ error: QueueError, now: ContinuousClock.Instant, jitter: Double) -> Failure {
        switch phase {
        case .connected(let endpoint):
            return failed(error, endpoint: endpoint, removedConsumer: nil, closing: false, now: now, jitter: jitter)
        case .closing(let endpoint, _):
            return failed(error, endpoint: endpoint, removedConsumer: nil, closing: true, now: now, jitter: jitter)
        default:
            preconditionFailure("connectionLost while \(phase)")
        }
    }

    private mutating func failed(
        _ error: QueueError, endpoint: Int, removedConsumer: Consumer?, closing: Bool, now: ContinuousClock.Instant,
        jitter: Double
    ) -> Failure {
        let unconfirmed = confirms.failAll(.confirmationUnknown(reason: error.description))
        for id in consumers.keys { consumers[id]?.active = false }
        status.connectedSince = nil
        status.blockedReason = nil
        if closing {
            return Failure(error: error, confirms: unconfirmed, removedConsumer: removedConsumer, refusal: .closed,
                           next: .finish(finish(error: nil)))
        }
        status.lastError = error
        // A consumer whose queue is gone was just removed: the endpoint itself answered, and
        // the next attempt (without that consumer) may well succeed.
        if !hasConnected && removedConsumer == nil {
            refusedForGood[endpoint] = !error.isRetryable
        }
        if !hasConnected && refusedForGood.allSatisfy({ $0 }) {
            return Failure(error: error, confirms: unconfirmed, removedConsumer: removedConsumer, refusal: error,
                           next: .finish(finish(error: error)))
        }
        consecutiveFailures += 1
        let cycle = (consecutiveFailures - 1) / endpoints.count
        let delay = backoff.upperBound(attempt: cycle) * min(max(jitter, 0), 1)
        let next = (endpoint + 1) % endpoints.count
        phase = .reconnecting(endpoint: next, at: now + delay)
        status.state = .reconnecting
        status.failedAttempts += 1
        return Failure(error: error, confirms: unconfirmed, removedConsumer: removedConsumer,
                       refusal: .notConnected(lastError: error.description),
                       next: .reconnect(endpoint: next, delay: delay, attempt: consecutiveFailures))
    }

    /// `close()`. Connected: stop the consumers and give outstanding confirms until
    /// `now + gracePeriod`. Otherwise the connection is finished at once.
    mutating func close(now: ContinuousClock.Instant, gracePeriod: Duration) -> CloseAction {
        switch phase {
        case .closing, .finished:
            return .none
        case .connected(let endpoint):
            phase = .closing(endpoint: endpoint, deadline: now + gracePeriod)
            return .drain(consumers: consumers.keys.sorted())
        case .idle, .connecting, .reconnecting:
            return .finish(finish(error: nil))
        }
    }

    /// Whether closing may proceed: every confirm is in, or the grace period is over.
    func closeDue(now: ContinuousClock.Instant) -> Bool {
        guard case .closing(_, let deadline) = phase else { return false }
        return confirms.waitingCount == 0 || now >= deadline
    }

    /// The close handshake is done (or was skipped).
    mutating func closeCompleted() -> Finish {
        finish(error: nil)
    }

    private mutating func finish(error: QueueError?) -> Finish {
        phase = .finished
        terminalError = error
        status.state = error == nil ? .closed : .failed
        if let error { status.lastError = error }
        status.connectedSince = nil
        status.blockedReason = nil
        let ended = consumers.keys.sorted().compactMap { consumers[$0]?.consumer }
        consumers.removeAll()
        consumerIDsByTag.removeAll()
        return Finish(error: error, connectWaiters: takeConnectWaiters(),
                      consumers: ended, confirms: confirms.failAll(.confirmationUnknown(reason: (error ?? .closed).description)))
    }

    /// `connection.blocked` (publishes are refused while it lasts) and
    /// `connection.unblocked` (nil reason).
    mutating func blocked(_ reason: String?) {
        status.blockedReason = reason
    }

    /// Why new work cannot be accepted, if it cannot: `.closed` once closing, the
    /// permanent error once given up.
    var refusal: QueueError? {
        switch phase {
        case .closing: .closed
        case .finished: terminalError ?? .closed
        default: nil
        }
    }
}
