import PushRuntime
import Synchronization

/// A bounded pool of `PostgresConnection`s, the one object the rest of pushd shares.
///
/// - Connections are opened lazily, when a caller needs one and fewer than `poolSize` exist;
///   each runs on its own thread. The first is opened at once; another only for a caller
///   that has waited `poolGrowthDelay` for a busy one, one at a time (a broken connection
///   is replaced at once if callers wait; a delay of zero opens one for every waiting caller
///   that the connections being opened do not cover).
/// - A caller waits at most `acquireTimeout` for a connection; while the server is
///   unreachable the pool keeps trying to connect, with `reconnectBackoff` between attempts,
///   and the caller's timeout error names the last connection failure.
/// - A connection that broke (server restart, network, admin shutdown) is closed and
///   replaced. A connection the server closed while it sat idle is noticed before a
///   statement is sent, so the statement goes to a fresh connection instead. A statement in
///   flight when the connection breaks fails with `StoreError.connectionLost`
///   (`isRetryable`), and the next call gets a fresh connection.
/// - `shutdown()` (or the `Service` conformance, which calls it on shutdown) closes every
///   connection, waiting for leased ones to come back.
public final class ConnectionPool: Sendable {
    public let configuration: StoreConfiguration
    let logger: Logger
    let state: Mutex<State>
    let counters = PoolCounters()
    /// Triggered once shutdown has closed every connection.
    let finished = ShutdownSignal()

    struct Waiter: Sendable {
        let id: UInt64
        let continuation: CheckedContinuation<Result<PostgresConnection, StoreError>, Never>
    }

    struct State: Sendable {
        var machine: PoolStateMachine<PostgresConnection, Waiter>
        var timers: [UInt64: Task<Void, Never>] = [:]
        var connectTasks: [UInt64: Task<Void, Never>] = [:]
        var nextID: UInt64 = 0

        mutating func makeID() -> UInt64 {
            nextID += 1
            return nextID
        }
    }

    public init(configuration: StoreConfiguration, logger: Logger = Logger(label: "pushd.store")) {
        self.configuration = configuration
        self.logger = logger.with(["database": .string(configuration.redactedDescription)])
        state = Mutex(State(machine: PoolStateMachine(
            maximumConnections: max(1, configuration.poolSize), growsAfterWaiting: configuration.poolGrowthDelay > .zero)))
    }

    /// Runs one statement on a pooled connection.
    public func query(_ query: SQLQuery) async throws(StoreError) -> QueryResult {
        let deadline = ContinuousClock.now + configuration.acquireTimeout
        while true {
            let connection = try await lease(deadline: deadline)
            switch await connection.queryAfterProbe(query, returningTo: self) {
            case .success(let result):
                return result
            case .failure(let error):
                // Found dead before sending: nothing ran, so try another connection.
                if case .connectionLost(let loss) = error, !loss.mayHaveExecuted { continue }
                throw error
            }
        }
    }

    /// Leases one connection for several statements (a transaction, session settings). The
    /// connection comes back to the pool afterwards; if `body` left a transaction open, or
    /// the connection broke, it is closed instead.
    public func withConnection<Result: Sendable>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws(StoreError) -> Result
    ) async throws(StoreError) -> Result {
        let deadline = ContinuousClock.now + configuration.acquireTimeout
        var connection = try await lease(deadline: deadline)
        while await !connection.probe() {
            await release(connection)
            connection = try await lease(deadline: deadline)
        }
        do {
            let result = try await body(connection)
            await release(connection)
            return result
        } catch {
            await release(connection)
            throw error
        }
    }

    /// What the pool has done so far: for tests, benchmarks and metrics.
    public var statistics: Statistics {
        let (idle, leased, connecting) = state.withLock { ($0.machine.idle.count, $0.machine.leased, $0.machine.connecting) }
        return Statistics(
            connectionsOpened: counters.opened.load(ordering: .relaxed),
            connectionsClosed: counters.closed.load(ordering: .relaxed),
            brokenConnectionsDiscarded: counters.discarded.load(ordering: .relaxed),
            failedConnectionAttempts: counters.failedAttempts.load(ordering: .relaxed),
            statementsSent: counters.statementsSent.load(ordering: .relaxed),
            statementsPrepared: counters.statementsPrepared.load(ordering: .relaxed),
            idle: idle, leased: leased, connecting: connecting)
    }

    public struct Statistics: Sendable, Equatable {
        public let connectionsOpened: Int
        public let connectionsClosed: Int
        /// Connections found broken and replaced.
        public let brokenConnectionsDiscarded: Int
        /// Attempts to open a connection that failed (each retried after a backoff while
        /// someone waits).
        public let failedConnectionAttempts: Int
        /// Statements executed (one round trip each).
        public let statementsSent: Int
        /// Statements prepared (`SQLQuery.prepared`: one extra round trip the first time a
        /// connection runs one, and again after the session lost it).
        public let statementsPrepared: Int
        public let idle: Int
        public let leased: Int
        public let connecting: Int
    }
}

/// Counters read without taking the pool's lock.
final class PoolCounters: Sendable {
    let opened = Atomic<Int>(0)
    let closed = Atomic<Int>(0)
    let discarded = Atomic<Int>(0)
    let failedAttempts = Atomic<Int>(0)
    let statementsSent = Atomic<Int>(0)
    let statementsPrepared = Atomic<Int>(0)
    let connectionNumbers = Atomic<Int>(0)
}
