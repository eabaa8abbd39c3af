import PushRuntime
import Synchronization

/// What callers on any thread share with the connection thread: the mailbox into it, the
/// status it publishes, the ledger that decides settlements, and the signal it gives when
/// it has stopped for good. Everything else belongs to the thread (`ConnectionWorker`).
final class ConnectionShared: Sendable {
    let configuration: AMQPConfiguration
    let topology: Topology?
    let topologyMode: TopologyMode
    let topologyScope: TopologyScope
    let logger: Logger
    let mailbox: Mailbox
    /// Which deliveries may still be settled; shared so that settling needs no hop.
    let ledger = SharedDeliveryLedger()
    private let statusStore = Mutex(ConnectionStatus())
    private let ending = Mutex(Ending())

    init(
        configuration: AMQPConfiguration, topology: Topology?, topologyMode: TopologyMode, topologyScope: TopologyScope,
        logger: Logger
    ) throws(QueueError) {
        self.configuration = configuration
        self.topology = topology
        self.topologyMode = topologyMode
        self.topologyScope = topologyScope
        self.logger = logger
        self.mailbox = Mailbox(wakeup: try Wakeup())
    }

    var status: ConnectionStatus { statusStore.withLock { $0 } }

    func publish(_ status: ConnectionStatus) {
        statusStore.withLock { $0 = status }
    }

    /// Whether the connection thread has stopped, and who waits for it to.
    private struct Ending {
        var finished = false
        var error: QueueError?
        var waiters: [CheckedContinuation<QueueError?, Never>] = []
    }

    /// The connection thread has answered everyone and stops: `error` is why it gave up,
    /// nil after `close()`.
    func finish(_ error: QueueError?) {
        let waiters = ending.withLock { ending in
            ending.finished = true
            ending.error = error
            defer { ending.waiters.removeAll() }
            return ending.waiters
        }
        for waiter in waiters { waiter.resume(returning: error) }
    }

    /// Returns once the connection thread has stopped, with why it gave up (nil after
    /// `close()`). Not cancellable, as a close that is under way cannot be withdrawn.
    func finished() async -> QueueError? {
        await withCheckedContinuation { continuation in
            let outcome = ending.withLock { ending -> QueueError?? in
                guard ending.finished else {
                    ending.waiters.append(continuation)
                    return .none
                }
                return .some(ending.error)
            }
            if case .some(let error) = outcome { continuation.resume(returning: error) }
        }
    }

    /// Settles a delivery if — and only if — the channel that delivered it is still the
    /// current one and it was not settled before; the ack itself goes out with the
    /// connection thread's next turn. Decided here, on the caller's thread, without waiting.
    func settle(_ deliveryTag: UInt64, generation: UInt64, _ action: SettleAction) -> Settlement {
        let outcome = ledger.settle(deliveryTag, generation: generation)
        switch outcome {
        case .settled:
            if mailbox.post(.settle(deliveryTag: deliveryTag, generation: generation, action: action)) != nil {
                // The connection went down meanwhile: nothing will be sent.
                logStaleSettlement(deliveryTag, generation, action)
                return .stale
            }
        case .stale:
            logStaleSettlement(deliveryTag, generation, action)
        case .alreadySettled:
            logger.warning("amqp message settled twice; ignored", ["delivery_tag": .int(Int(truncatingIfNeeded: deliveryTag))])
        }
        return outcome
    }

    private func logStaleSettlement(_ deliveryTag: UInt64, _ generation: UInt64, _ action: SettleAction) {
        logger.info("amqp settlement of a message from a dead connection ignored; the broker redelivers it", [
            "delivery_tag": .int(Int(truncatingIfNeeded: deliveryTag)), "generation": .int(Int(truncatingIfNeeded: generation)),
            "action": .string("\(action)"),
        ])
    }
}
