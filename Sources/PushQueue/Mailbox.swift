import Synchronization

/// The only way into the connection thread: every request (start, consume, cancel, wait,
/// administration, close) and every publish and settlement is posted here, and the thread
/// takes them in bulk between its reads, so a publish or an ack costs its caller no thread
/// switch and the thread sends many per turn.
///
/// Publishes and settlements (`Item`) are refused while the connection is down, at once,
/// instead of queueing work for a connection that may take long to come back. Requests
/// (`Command`) are always taken until the connection has finished; after that they are
/// answered on the caller's thread with the reason.
final class Mailbox: Sendable {
    enum Item: Sendable {
        case publish(PublishRequest, CheckedContinuation<Result<Void, QueueError>, Never>)
        case batch([PublishRequest], CheckedContinuation<[Result<Void, QueueError>], Never>)
        case settle(deliveryTag: UInt64, generation: UInt64, action: SettleAction)

        /// Answers an item that will never be sent.
        func refuse(_ error: QueueError) {
            switch self {
            case .publish(_, let continuation): continuation.resume(returning: .failure(error))
            case .batch(let requests, let continuation): continuation.resume(returning: requests.map { _ in .failure(error) })
            case .settle: break  // Nothing was sent; the broker redelivers.
            }
        }
    }

    enum Command: Sendable {
        case start
        case consume(queue: String, prefetch: UInt16, consumerTag: String?,
                     reply: CheckedContinuation<Result<ConsumerHandle, QueueError>, Never>)
        case cancelConsumer(id: UInt64, done: CheckedContinuation<Void, Never>?)
        case awaitConnection(id: UInt64, CheckedContinuation<Result<Void, QueueError>, Never>)
        case connectWaiterExpired(id: UInt64, timeout: Duration)
        /// Runs on the connection thread with the open connection, or with why there is none.
        case admin(@Sendable (Result<RawConnection, QueueError>) -> Void)
        case close

        /// Answers a request the finished connection will never carry out.
        func refuse(_ error: QueueError) {
            switch self {
            case .consume(_, _, _, let reply): reply.resume(returning: .failure(error))
            case .cancelConsumer(_, let done): done?.resume()
            case .awaitConnection(_, let continuation): continuation.resume(returning: .failure(error))
            case .admin(let body): body(.failure(error))
            case .start, .connectWaiterExpired, .close: break
            }
        }
    }

    private struct State {
        var items: [Item] = []
        var commands: [Command] = []
        /// Set while publishes and settlements are refused.
        var itemRefusal: QueueError? = .notConnected(lastError: nil)
        /// Set once the connection has finished: everything is refused.
        var finished: QueueError?
    }

    private let state = Mutex(State())
    /// Items and commands posted and not yet taken: changed only under `state`'s lock (so it
    /// never goes negative), read without it for `Wakeup`'s protocol.
    private let count = Atomic<Int>(0)
    let wakeup: Wakeup

    init(wakeup: Wakeup) {
        self.wakeup = wakeup
    }

    /// Queues `item` for the connection thread; returns why not if it is refused (the
    /// caller then answers the item itself).
    func post(_ item: Item) -> QueueError? {
        let refusal = state.withLock { state -> QueueError? in
            if let refusal = state.itemRefusal { return refusal }
            state.items.append(item)
            count.wrappingAdd(1, ordering: .sequentiallyConsistent)
            return nil
        }
        guard refusal == nil else { return refusal }
        wakeup.notify()
        return nil
    }

    /// Queues `command`; answers it here instead if the connection has finished.
    func post(_ command: Command) {
        let refusal = state.withLock { state -> QueueError? in
            if let finished = state.finished { return finished }
            state.commands.append(command)
            count.wrappingAdd(1, ordering: .sequentiallyConsistent)
            return nil
        }
        if let refusal {
            command.refuse(refusal)
            return
        }
        wakeup.notify()
    }

    var hasWork: Bool { count.load(ordering: .sequentiallyConsistent) != 0 }

    var hasCommands: Bool { state.withLock { !$0.commands.isEmpty } }

    /// The publishes and settlements posted so far, oldest first.
    func takeItems() -> [Item] {
        let items = state.withLock { state -> [Item] in
            defer { state.items.removeAll(keepingCapacity: true) }
            if !state.items.isEmpty { count.wrappingSubtract(state.items.count, ordering: .sequentiallyConsistent) }
            return state.items
        }
        return items
    }

    /// The requests posted so far, oldest first.
    func takeCommands() -> [Command] {
        let commands = state.withLock { state -> [Command] in
            defer { state.commands.removeAll() }
            if !state.commands.isEmpty { count.wrappingSubtract(state.commands.count, ordering: .sequentiallyConsistent) }
            return state.commands
        }
        return commands
    }

    /// Accepts publishes and settlements (the connection is up).
    func open() {
        state.withLock { $0.itemRefusal = nil }
    }

    /// Refuses publishes and settlements with `reason` from now on; returns those posted
    /// and not taken.
    func shut(_ reason: QueueError) -> [Item] {
        state.withLock { $0.itemRefusal = reason }
        return takeItems()
    }

    /// Refuses everything with `reason` from now on; returns what was posted and not taken.
    func finish(_ reason: QueueError) -> (items: [Item], commands: [Command]) {
        state.withLock { state in
            state.itemRefusal = reason
            state.finished = reason
        }
        return (takeItems(), takeCommands())
    }
}

/// A consumer the connection thread has started (or registered to start on connect).
struct ConsumerHandle: Sendable {
    let id: UInt64
    let tag: String
    let stream: AsyncThrowingStream<QueueMessage, any Error>
}
