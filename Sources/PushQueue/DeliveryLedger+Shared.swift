import Synchronization

/// The ledger behind a lock: the connection thread records deliveries and generations,
/// and any thread settles, so that an ack is decided (and answered) without waiting for
/// the connection thread.
final class SharedDeliveryLedger: Sendable {
    private let ledger = Mutex(DeliveryLedger())

    var generation: UInt64 { ledger.withLock { $0.generation } }

    func startGeneration() -> UInt64 { ledger.withLock { $0.startGeneration() } }

    func endGeneration() { ledger.withLock { $0.endGeneration() } }

    func delivered(_ tag: UInt64) { ledger.withLock { $0.delivered(tag) } }

    func settle(_ tag: UInt64, generation: UInt64) -> Settlement {
        ledger.withLock { $0.settle(tag, generation: generation) }
    }
}
