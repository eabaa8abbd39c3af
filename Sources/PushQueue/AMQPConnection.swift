import PushRuntime
import Synchronization

/// One AMQP connection to RabbitMQ, owning a dedicated thread.
///
/// rabbitmq-c is neither thread-safe nor non-blocking, so the connection is an actor whose
/// executor is one `DedicatedThreadExecutor`: every C call happens on that thread, and a
/// blocking call stalls only that thread, never Swift's cooperative pool. While idle, the
/// thread waits in `poll` for the broker (or for a caller, see `Wakeup`), at least every
/// second and every quarter heartbeat, which is when rabbitmq-c sends and checks heartbeats.
///
/// The connection survives the broker: when the socket fails, heartbeats stop, or the broker
/// closes the connection, it reconnects with `configuration.reconnectBackoff`, declares the
/// topology again and resumes every consumer. Publishes that were waiting for a confirm
/// fail with the retryable `QueueError.confirmationUnknown`; deliveries of the dead
/// connection can no longer be settled (the broker redelivers them).
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
/// it, so that it is stopped after them.
public actor AMQPConnection {
    public nonisolated let configuration: AMQPConfiguration
    /// Declared (or verified) on every connect, before consumers resume.
    public nonisolated let topology: Topology?
    public nonisolated let topologyMode: TopologyMode
    nonisolated let logger: Logger
    nonisolated let executor: DedicatedThreadExecutor
    nonisolated let wakeup: Wakeup
    /// Publishes and settlements on their way to the connection thread.
    nonisolated let mailbox: Mailbox
    /// Which deliveries may still be settled; shared so that settling needs no hop.
    nonisolated let ledger = SharedDeliveryLedger()
    private nonisolated let statusStore = StatusStore()
    private nonisolated let waiterIDs = Atomic<UInt64>(0)

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    var raw: RawConnection?
    /// Publishes awaiting confirms, by channel sequence number, each named by a ticket.
    var confirms: ConfirmTracker<UInt64>
    var nextTicket: UInt64 = 0
    /// Who waits for which ticket's outcome.
    var confirmWaiters: [UInt64: ConfirmWaiter] = [:]
    var consumers: [UInt64: ConsumerRecord] = [:]
    var consumerIDsByTag: [String: UInt64] = [:]
    var nextConsumerID: UInt64 = 0
    var blockedReason: String?

    var lifecycle: Task<Void, Never>?
    var lifecycleFinished = false
    var hasConnected = false
    var closing = false
    var closeDeadline = ContinuousClock.now
    var terminalError: QueueError?
    var connectWaiters: [UInt64: CheckedContinuation<Result<Void, QueueError>, Never>] = [:]
    var expiredConnectWaiters: Set<UInt64> = []
    var terminationWaiters: [CheckedContinuation<QueueError?, Never>] = []

    private static let executorCount = Atomic<Int>(0)

    /// Creates the connection and its thread; `start()` connects.
    public init(
        configuration: AMQPConfiguration, topology: Topology? = nil, topologyMode: TopologyMode = .declare,
        logger: Logger = Logger(label: "pushd.amqp")
    ) throws(QueueError) {
        self.configuration = try configuration.validated()
        self.topology = topology
        self.topologyMode = topologyMode
        self.logger = logger.with(["amqp": .string(configuration.redactedURL), "connection": .string(configuration.connectionName)])
        let wakeup = try Wakeup()
        self.wakeup = wakeup
        self.mailbox = Mailbox(wakeup: wakeup)
        self.confirms = ConfirmTracker<UInt64>(timeout: configuration.confirmTimeout)
        let number = Self.executorCount.wrappingAdd(1, ordering: .relaxed).newValue
        self.executor = DedicatedThreadExecutor(name: "amqp-\(number)")
    }

    deinit {
        // Only here, never in close(): a job enqueued after shutdown runs on its caller's
        // thread, and two such jobs could then run at once. Once deinit runs, no reference
        // is left to enqueue anything.
        executor.shutdown()
    }

    /// The connection's health, without waiting for the connection thread.
    public nonisolated var status: ConnectionStatus { statusStore.snapshot }

    func updateStatus(_ change: (inout ConnectionStatus) -> Void) {
        statusStore.update(change)
    }

    /// Announces the job that an await inside the actor may become.
    ///
    /// `DedicatedThreadExecutor` runs jobs as a task executor too, so for a task without that
    /// preference the runtime may hop through the executor's queue at an await inside the
    /// actor, even into its own `withCheckedContinuation` (measured: a job queued meanwhile
    /// runs in between). Such a job must not wait behind the event loop's `poll`; the body
    /// that follows calls `wakeup.arrived()` first.
    func announcedSuspension() {
        wakeup.announce()
    }

    nonisolated func nextWaiterID() -> UInt64 {
        waiterIDs.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// How long the event loop may block in `poll`: short enough that rabbitmq-c sends our
    /// heartbeats on time and notices missing ones within a fraction of the interval.
    var pollInterval: Duration {
        let heartbeat = Duration.seconds(raw?.heartbeatSeconds ?? 0)
        guard heartbeat > .zero else { return .seconds(1) }
        return max(.milliseconds(10), min(.seconds(1), heartbeat / 4))
    }
}

/// The status snapshot, shared between the connection thread (writer) and any reader.
private final class StatusStore: Sendable {
    private let mutex = Mutex(ConnectionStatus())

    var snapshot: ConnectionStatus { mutex.withLock { $0 } }

    func update(_ change: (inout ConnectionStatus) -> Void) {
        mutex.withLock { change(&$0) }
    }
}

/// Who is waiting for a publisher confirm.
enum ConfirmWaiter {
    case single(CheckedContinuation<Result<Void, QueueError>, Never>)
    case batch(BatchConfirmation, index: Int)
}

/// Collects the confirms of one batch publish and resumes its caller once all are in.
/// Actor-confined (created, filled and resumed on the connection thread), hence no locking.
final class BatchConfirmation {
    private var results: [Result<Void, QueueError>?]
    private(set) var remaining: Int
    private var continuation: CheckedContinuation<[Result<Void, QueueError>], Never>?

    init(count: Int, continuation: CheckedContinuation<[Result<Void, QueueError>], Never>) {
        results = Array(repeating: nil, count: count)
        remaining = count
        self.continuation = continuation
    }

    var collected: [Result<Void, QueueError>] {
        results.map { $0 ?? .failure(.confirmationUnknown(reason: "no outcome recorded")) }
    }

    func resolve(_ index: Int, _ result: Result<Void, QueueError>) {
        guard results[index] == nil else { return }
        results[index] = result
        remaining -= 1
        if remaining == 0, let continuation {
            self.continuation = nil
            continuation.resume(returning: collected)
        }
    }
}

/// A consumer as the connection remembers it across reconnects.
struct ConsumerRecord {
    let id: UInt64
    let queue: String
    let tag: String
    let prefetch: UInt16
    let continuation: AsyncThrowingStream<QueueMessage, any Error>.Continuation
    /// Whether `basic.consume` is in effect on the current channel.
    var active: Bool
}
