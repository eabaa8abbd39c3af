/// Which deliveries of the current channel are still unsettled, so that a message is settled
/// at most once and only on the channel that delivered it. Settling an unknown delivery tag
/// would make the broker close the channel (406 PRECONDITION_FAILED), taking every other
/// in-flight delivery and publish down with it.
struct DeliveryLedger {
    /// Incremented for each new channel; deliveries carry the generation they arrived on.
    private(set) var generation: UInt64 = 0
    private var unsettled: Set<UInt64> = []

    var unsettledCount: Int { unsettled.count }

    /// A new channel: every earlier delivery is now stale.
    mutating func startGeneration() -> UInt64 {
        generation += 1
        unsettled.removeAll()
        return generation
    }

    /// The channel died: its deliveries are stale until the next one opens.
    mutating func endGeneration() {
        generation += 1
        unsettled.removeAll()
    }

    mutating func delivered(_ tag: UInt64) {
        unsettled.insert(tag)
    }

    /// Whether `tag` of `generation` may be settled now; if so it is settled from here on.
    mutating func settle(_ tag: UInt64, generation: UInt64) -> Settlement {
        guard generation == self.generation else { return .stale }
        return unsettled.remove(tag) == nil ? .alreadySettled : .settled
    }
}
