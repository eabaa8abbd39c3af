extension AMQPConnection {
    /// Declares (or, with `.verify`, checks) `topology` now. Connections given a topology at
    /// creation do this by themselves on every connect.
    public nonisolated func declare(_ topology: Topology, mode: TopologyMode = .declare) async throws(QueueError) {
        wakeup.announce()
        try await performAdmin { raw throws(QueueError) in try Self.declare(topology, mode: mode, on: raw) }
    }

    /// Deletes the topology's queues (with their messages) and exchanges; missing ones are
    /// skipped. For tests and benchmarks that declared a scratch copy.
    public nonisolated func delete(_ topology: Topology) async throws(QueueError) {
        wakeup.announce()
        try await performAdmin { raw throws(QueueError) in
            for queue in topology.queues { try Self.ignoringMissing { () throws(QueueError) in _ = try raw.delete(queue: queue.name) } }
            for exchange in topology.exchanges { try Self.ignoringMissing { () throws(QueueError) in try raw.delete(exchange: exchange.name) } }
        }
    }

    /// Ready messages and consumers of `queue` (a passive declare).
    public nonisolated func statistics(queue: String) async throws(QueueError) -> QueueStatistics {
        wakeup.announce()
        return try await performAdmin { raw throws(QueueError) in try raw.inspect(queue: queue) }
    }

    /// Removes the ready messages of `queue`; returns how many.
    @discardableResult
    public nonisolated func purge(queue: String) async throws(QueueError) -> Int {
        wakeup.announce()
        return try await performAdmin { raw throws(QueueError) in try raw.purge(queue: queue) }
    }

    private func performAdmin<Result: Sendable>(
        _ body: @Sendable (RawConnection) throws(QueueError) -> Result
    ) throws(QueueError) -> Result {
        wakeup.arrived()
        if closing { throw .closed }
        if let terminalError { throw terminalError }
        guard let raw, raw.failure == nil else { throw .notConnected(lastError: status.lastError?.description) }
        return try body(raw)
    }

    func declare(_ topology: Topology, mode: TopologyMode, on raw: RawConnection) throws(QueueError) {
        try Self.declare(topology, mode: mode, on: raw)
    }

    static func declare(_ topology: Topology, mode: TopologyMode, on raw: RawConnection) throws(QueueError) {
        let passive = mode == .verify
        for exchange in topology.exchanges { try raw.declare(exchange, passive: passive) }
        for queue in topology.queues { try raw.declare(queue, passive: passive) }
        guard !passive else { return }
        for binding in topology.bindings { try raw.bind(binding) }
    }

    private static func ignoringMissing(_ body: () throws(QueueError) -> Void) throws(QueueError) {
        do {
            try body()
        } catch {
            if case .channelClosedByBroker(404, _) = error { return }
            throw error
        }
    }
}
