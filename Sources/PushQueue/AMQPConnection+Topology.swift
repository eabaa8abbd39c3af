extension AMQPConnection {
    /// Declares (or, with `.verify`, checks) `topology` now. Connections given a topology at
    /// creation do this by themselves on every connect.
    public func declare(_ topology: Topology, mode: TopologyMode = .declare) async throws(QueueError) {
        try await performAdmin { raw throws(QueueError) in try Self.declare(topology, mode: mode, exchangesOnly: false, on: raw) }
    }

    /// Deletes the topology's queues (with their messages) and exchanges; missing ones are
    /// skipped. For tests and benchmarks that declared a scratch copy.
    public func delete(_ topology: Topology) async throws(QueueError) {
        try await performAdmin { raw throws(QueueError) in
            for queue in topology.queues { try Self.ignoringMissing { () throws(QueueError) in _ = try raw.delete(queue: queue.name) } }
            for exchange in topology.exchanges { try Self.ignoringMissing { () throws(QueueError) in try raw.delete(exchange: exchange.name) } }
        }
    }

    /// Ready messages and consumers of `queue` (a passive declare).
    public func statistics(queue: String) async throws(QueueError) -> QueueStatistics {
        try await performAdmin { raw throws(QueueError) in try raw.inspect(queue: queue) }
    }

    /// Removes the ready messages of `queue`; returns how many.
    @discardableResult
    public func purge(queue: String) async throws(QueueError) -> Int {
        try await performAdmin { raw throws(QueueError) in try raw.purge(queue: queue) }
    }

    /// Declares a durable quorum queue of the caller's own and binds it to `exchange`: how a
    /// producer subscribes to the events it asked for (`job.completed` on the events exchange).
    public func declareSubscription(queue: String, exchange: String, routingKey: String) async throws(QueueError) {
        try await performAdmin { raw throws(QueueError) in
            try raw.declare(QueueDeclaration(name: queue, arguments: ["x-queue-type": "quorum"]), passive: false)
            try raw.bind(BindingDeclaration(exchange: exchange, queue: queue, routingKey: routingKey))
        }
    }

    /// Deletes a queue with its messages (a subscription no longer needed); a missing queue is
    /// no error. Returns how many messages it held.
    @discardableResult
    public func deleteQueue(_ queue: String) async throws(QueueError) -> Int {
        try await performAdmin { raw throws(QueueError) in
            var count = 0
            try Self.ignoringMissing { () throws(QueueError) in count = try raw.delete(queue: queue) }
            return count
        }
    }

    /// Runs `body` on the connection thread with the open connection.
    private func performAdmin<Value: Sendable>(
        _ body: @escaping @Sendable (RawConnection) throws(QueueError) -> Value
    ) async throws(QueueError) -> Value {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, QueueError>, Never>) in
            shared.mailbox.post(.admin { access in
                switch access {
                case .failure(let error):
                    continuation.resume(returning: .failure(error))
                case .success(let raw):
                    do throws(QueueError) {
                        continuation.resume(returning: .success(try body(raw)))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            })
        }
        return try result.get()
    }

    static func declare(
        _ topology: Topology, mode: TopologyMode, exchangesOnly: Bool, on raw: RawConnection
    ) throws(QueueError) {
        let passive = mode == .verify
        for exchange in topology.exchanges { try raw.declare(exchange, passive: passive) }
        guard !exchangesOnly else { return }
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
