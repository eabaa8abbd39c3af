import CPostgreSQL
import Foundation
import PushRuntime
import Synchronization

/// One libpq connection, owned by an actor that runs on its own thread.
///
/// libpq blocks in every call and a `PGconn` must not be used by two threads at once; an
/// actor whose executor is a `DedicatedThreadExecutor` gives both guarantees: every method
/// runs on that one thread, one at a time, and a slow query stalls only that thread, never
/// Swift's cooperative pool. Most code uses `ConnectionPool`; a connection is handed out by
/// `ConnectionPool.withConnection` or opened alone with `connect` (the migrator does, to hold
/// its advisory lock on one session).
public actor PostgresConnection {
    private let executor: DedicatedThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The thread's name, for logs (`pg-3`).
    public nonisolated let name: String
    let logger: Logger
    private var handle: OpaquePointer?
    private var noticeContext: UnsafeMutableRawPointer?
    private var cancelHandle: CancelHandle?
    private var backendPID: Int32 = 0
    /// The statements this session has prepared (`SQLQuery.prepared`): the server-side name
    /// by statement text and parameter types. A new session starts empty.
    var preparedStatements: [PreparedStatementKey: String] = [:]
    /// False: `SQLQuery.prepared` is ignored (`StoreConfiguration.preparesStatements`).
    let preparesStatements: Bool

    private enum Lifecycle: Int {
        case open, broken, closed
    }

    private let lifecycle = Atomic<Int>(Lifecycle.open.rawValue)
    /// The pool's counters, when the connection belongs to a pool.
    let counters: PoolCounters?
    private let idleOutsideTransaction = Atomic<Bool>(true)

    private init(name: String, logger: Logger, counters: PoolCounters?, preparesStatements: Bool) {
        self.name = name
        self.preparesStatements = preparesStatements
        self.counters = counters
        self.logger = logger.with(["connection": .string(name)])
        executor = DedicatedThreadExecutor(name: "pushd-\(name)")
    }

    /// Opens a connection on a new dedicated thread. `PQconnectdbParams` blocks that thread,
    /// bounded by the configuration's connect timeout.
    public static func connect(
        configuration: StoreConfiguration, name: String = "pg", logger: Logger = Logger(label: "pushd.store")
    ) async throws(StoreError) -> PostgresConnection {
        try await connect(configuration: configuration, name: name, logger: logger, counters: nil)
    }

    static func connect(
        configuration: StoreConfiguration, name: String, logger: Logger, counters: PoolCounters?
    ) async throws(StoreError) -> PostgresConnection {
        let connection = PostgresConnection(
            name: name, logger: logger, counters: counters, preparesStatements: configuration.preparesStatements)
        do {
            try await connection.open(configuration.connectionKeywords)
        } catch {
            connection.executor.shutdown()
            throw error
        }
        return connection
    }

    private func open(_ keywords: [(String, String)]) throws(StoreError) {
        let connection = connectWithParameters(keywords)
        guard let connection else { throw .connectionFailed("libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.errorMessage(connection)
            PQfinish(connection)
            throw .connectionFailed(message)
        }
        handle = connection
        noticeContext = NoticeSink.install(NoticeSink(logger: logger), on: connection)
        cancelHandle = CancelHandle(PQgetCancel(connection))
        backendPID = PQbackendPID(connection)
    }

    /// False once the connection broke or was closed: it will never work again.
    public nonisolated var isUsable: Bool { lifecycle.load(ordering: .acquiring) == Lifecycle.open.rawValue }

    /// True unless the last statement left a transaction open (or failed inside one).
    nonisolated var isIdleOutsideTransaction: Bool { idleOutsideTransaction.load(ordering: .acquiring) }

    /// The server process serving this session (`pg_stat_activity.pid`).
    public var serverProcessID: Int32 { backendPID }

    /// Closes the session (`PQfinish`, on this connection's thread) and stops the thread.
    /// Further calls fail with `connectionLost`.
    public func close() {
        if let handle {
            cancelHandle?.invalidate()
            PQfinish(handle)
            self.handle = nil
        }
        if let noticeContext {
            NoticeSink.release(noticeContext)
            self.noticeContext = nil
        }
        lifecycle.store(Lifecycle.closed.rawValue, ordering: .releasing)
        executor.shutdown()
    }

    /// A connection dropped without `close()` (the pool always closes) is finished on its
    /// own thread too: an isolated `deinit` runs on the actor's executor.
    isolated deinit {
        if let handle {
            cancelHandle?.invalidate()
            PQfinish(handle)
        }
        if let noticeContext { NoticeSink.release(noticeContext) }
        executor.shutdown()
    }

    func markBroken() {
        _ = lifecycle.compareExchange(
            expected: Lifecycle.open.rawValue, desired: Lifecycle.broken.rawValue, ordering: .acquiringAndReleasing)
    }

    /// Reads whatever the server sent while the connection sat idle, without blocking. A
    /// server that shut down or a session that was terminated sends a FATAL message and
    /// closes the socket; both are read here (one `PQconsumeInput` per readable chunk, so
    /// the end of the stream after the message is seen too), before a statement is sent.
    func probe() -> Bool {
        guard let handle, isUsable else { return false }
        assert(onOwnThread, "libpq call off the connection's thread")
        for _ in 0..<8 {
            guard PQstatus(handle) == CONNECTION_OK, PQsocket(handle) >= 0 else { break }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready == 0 { return true }
            if ready < 0 {
                if errno == EINTR { continue }
                return true
            }
            guard PQconsumeInput(handle) == 1 else { break }
        }
        guard PQstatus(handle) != CONNECTION_OK else { return true }
        markBroken()
        logger.info("postgres connection found dead while idle", ["reason": .string(Self.errorMessage(handle))])
        return false
    }

    var liveHandle: OpaquePointer? {
        guard isUsable else { return nil }
        return handle
    }

    var currentCancelHandle: CancelHandle? { cancelHandle }
    /// For assertions: libpq calls must run on this connection's thread.
    var onOwnThread: Bool { executor.isCurrentThread }

    func recordTransactionStatus() {
        guard let handle else { return }
        idleOutsideTransaction.store(PQtransactionStatus(handle) == PQTRANS_IDLE, ordering: .releasing)
    }

    static func errorMessage(_ connection: OpaquePointer) -> String {
        guard let message = PQerrorMessage(connection) else { return "unknown libpq error" }
        let text = String(cString: message).trimmingTrailingNewlines()
        return text.isEmpty ? "unknown libpq error" : text
    }
}

/// `PQconnectdbParams` with NULL-terminated C arrays of the keywords and values.
/// `expand_dbname` is 0: a database name is only ever a name, never parsed as a URL.
private func connectWithParameters(_ pairs: [(String, String)]) -> OpaquePointer? {
    let keys: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0.0) } + [nil]
    let values: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0.1) } + [nil]
    defer {
        keys.forEach { free($0) }
        values.forEach { free($0) }
    }
    let constKeys = keys.map { $0.map { UnsafePointer($0) } }
    let constValues = values.map { $0.map { UnsafePointer($0) } }
    return constKeys.withUnsafeBufferPointer { keyBuffer in
        constValues.withUnsafeBufferPointer { valueBuffer in
            guard let keyBase = keyBuffer.baseAddress, let valueBase = valueBuffer.baseAddress else { return nil }
            return PQconnectdbParams(keyBase, valueBase, 0)
        }
    }
}
