import PushRuntime
import Synchronization

/// One AMQP connection to RabbitMQ (or to the first reachable node of a cluster).
///
/// A thin `Sendable` facade: a thread of its own (`ConnectionWorker`) owns the rabbitmq-c
/// connection, and every request made here — consume, cancel, publish, settle, close —
/// reaches that thread through its `Mailbox`. What the connection does when, across
/// reconnects and failovers, is decided by a pure `AMQPConnectionStateMachine`.
///
/// The connection survives the broker: when the socket fails, heartbeats stop, or the broker
/// closes the connection, it reconnects — to the next of `configuration.endpoints`, with
/// `configuration.reconnectBackoff` — declares the topology again and resumes every
/// consumer. Publishes that were waiting for a confirm fail with the retryable
/// `QueueError.confirmationUnknown`; deliveries of the dead connection can no longer be
/// settled (the broker redelivers them).
///
/// Use one connection for consuming and another for publishing, as RabbitMQ recommends: a
/// broker that throttles a publishing connection then does not delay acknowledgements.
///
///     let connection = try AMQPConnection(configuration: try AMQPConfiguration(url: url), topology: .production)
///     await connection.start()
///     try await connection.waitUntilConnected(timeout: .seconds(30))
///     try await connection.publish(message, exchange: Topology.production.jobsExchange, routingKey: Topology.jobRoutingKey)
///
/// In a `ServiceGroup` the connection is a `Service`: start it before the services that use
/// it, so that it is stopped after them. Dropping the last reference closes it.
public final class AMQPConnection: Sendable {
    public let configuration: AMQPConfiguration
    /// Declared (or verified) on every connect, before consumers resume.
    public var topology: Topology? { shared.topology }
    public var topologyMode: TopologyMode { shared.topologyMode }
    let shared: ConnectionShared
    private let waiterIDs = Atomic<UInt64>(0)

    private static let connectionCount = Atomic<Int>(0)

    /// Creates the connection and its thread; `start()` connects.
    public init(
        configuration: AMQPConfiguration, topology: Topology? = nil, topologyMode: TopologyMode = .declare,
        topologyScope: TopologyScope = .everything, logger: Logger = Logger(label: "pushd.amqp")
    ) throws(QueueError) {
        let configuration = try configuration.validated()
        self.configuration = configuration
        self.shared = try ConnectionShared(
            configuration: configuration, topology: topology, topologyMode: topologyMode, topologyScope: topologyScope,
            logger: logger.with(["amqp": .string(configuration.redactedURL), "connection": .string(configuration.connectionName)]))
        let number = Self.connectionCount.wrappingAdd(1, ordering: .relaxed).newValue
        ConnectionWorker.spawn(shared, name: "amqp-\(number)")
    }

    deinit {
        // Nobody can use the connection any more: let its thread close it and exit.
        shared.mailbox.post(.close)
    }

    /// The connection's health, without waiting for the connection thread.
    public var status: ConnectionStatus { shared.status }

    /// Starts connecting in the background and returns at once; reconnects for as long as the
    /// connection is open. Calling it again does nothing.
    public func start() async {
        shared.mailbox.post(.start)
    }

    /// Returns once connected (immediately if already), or throws: `.timedOut` after
    /// `timeout`, the permanent error if the connection gave up, `.closed` after `close()`.
    public func waitUntilConnected(timeout: Duration) async throws(QueueError) {
        let id = waiterIDs.wrappingAdd(1, ordering: .relaxed).newValue
        let timer = TimerHandle()
        defer { timer.cancel() }
        let result = await withCheckedContinuation { continuation in
            shared.mailbox.post(.awaitConnection(id: id, continuation))
            // Posted after the wait itself, so the thread always sees the wait first.
            timer.start { [mailbox = shared.mailbox] in
                do { try await Task.sleep(for: timeout) } catch { return }
                mailbox.post(.connectWaiterExpired(id: id, timeout: timeout))
            }
        }
        try result.get()
    }

    /// Stops consumers (their sequences end after what was already delivered), waits up to
    /// `configuration.closeGracePeriod` for outstanding publisher confirms, closes the
    /// connection with the AMQP handshake and stops reconnecting. Settling messages after
    /// this returns `.stale`.
    public func close() async {
        shared.mailbox.post(.close)
        _ = await shared.finished()
    }

    /// Returns when the connection has stopped for good: nil after `close()`, the error if
    /// it gave up.
    func terminated() async -> QueueError? {
        await shared.finished()
    }
}

/// The timeout task of one `waitUntilConnected`, cancelled when the wait ends.
private final class TimerHandle: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let cancelled = Atomic<Bool>(false)

    func start(_ body: @escaping @Sendable () async -> Void) {
        let created = Task { await body() }
        task.withLock { $0 = created }
        if cancelled.load(ordering: .sequentiallyConsistent) { created.cancel() }
    }

    func cancel() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
        task.withLock { $0?.cancel() }
    }
}
