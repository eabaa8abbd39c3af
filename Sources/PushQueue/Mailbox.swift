import Synchronization

/// The hot path into the connection thread: publishes and settlements are posted here and
/// the event loop takes them in bulk, so a publish or an ack costs its caller no hop onto
/// the actor (two thread switches each) and the loop sends many per turn.
///
/// While the connection is down the mailbox is shut: posting fails at once with the reason,
/// instead of queueing work for a connection that may take long to come back.
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

    private struct State {
        var items: [Item] = []
        var refusal: QueueError? = .notConnected(lastError: nil)
    }

    private let state = Mutex(State())
    /// Items posted and not yet taken, readable without the lock for `Wakeup`'s protocol.
    private let count = Atomic<Int>(0)
    private let wakeup: Wakeup

    init(wakeup: Wakeup) {
        self.wakeup = wakeup
    }

    /// Queues `item` for the connection thread; returns why not if the mailbox is shut (the
    /// caller then answers the item itself).
    func post(_ item: Item) -> QueueError? {
        let refusal = state.withLock { state -> QueueError? in
            if let refusal = state.refusal { return refusal }
            state.items.append(item)
            return nil
        }
        guard refusal == nil else { return refusal }
        count.wrappingAdd(1, ordering: .sequentiallyConsistent)
        wakeup.notify()
        return nil
    }

    var hasItems: Bool { count.load(ordering: .sequentiallyConsistent) != 0 }

    /// Everything posted so far, oldest first.
    func take() -> [Item] {
        let items = state.withLock { state -> [Item] in
            defer { state.items.removeAll(keepingCapacity: true) }
            return state.items
        }
        if !items.isEmpty { count.wrappingSubtract(items.count, ordering: .sequentiallyConsistent) }
        return items
    }

    /// Accepts posts (the connection is up).
    func open() {
        state.withLock { $0.refusal = nil }
    }

    /// Refuses posts with `reason` from now on; returns what was posted and not taken.
    func shut(_ reason: QueueError) -> [Item] {
        state.withLock { $0.refusal = reason }
        return take()
    }
}
