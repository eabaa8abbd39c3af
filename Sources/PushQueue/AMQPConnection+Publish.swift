extension AMQPConnection {
    /// Publishes one message and returns once the broker has taken responsibility for it
    /// (publisher confirm): for a persistent message to a quorum queue, once a majority of
    /// its replicas have written it.
    ///
    /// Many calls may be in flight at once (from concurrent tasks); each waits only for its
    /// own confirm. Errors: `.unroutable` (mandatory and no queue matched),
    /// `.rejectedByBroker` (nack), `.confirmationUnknown` / `.confirmTimedOut` (publish again:
    /// delivery is at least once), `.notConnected`, `.brokerBlocked`, `.closed`.
    /// Cancelling the calling task does not withdraw a message already sent.
    public nonisolated func publish(
        _ message: OutgoingMessage, exchange: String, routingKey: String, mandatory: Bool = true
    ) async throws(QueueError) {
        try await publish(PublishRequest(exchange: exchange, routingKey: routingKey, message: message, mandatory: mandatory))
    }

    public nonisolated func publish(_ request: PublishRequest) async throws(QueueError) {
        wakeup.announce()
        try await onConnectionThread { () async throws(QueueError) in
            try await performPublish(request).get()
        }
    }

    /// Publishes all messages back to back, then waits for all their confirms: the fastest
    /// way to publish many. Results are in the order of `requests`; each is what `publish`
    /// would have returned for that message. Keep batches to a few thousand messages: the
    /// connection thread reads nothing while it sends a batch.
    public nonisolated func publish(_ requests: [PublishRequest]) async -> [Result<Void, QueueError>] {
        guard !requests.isEmpty else { return [] }
        wakeup.announce()
        return await onConnectionThread { await performPublish(batch: requests) }
    }

    private func performPublish(_ request: PublishRequest) async -> Result<Void, QueueError> {
        wakeup.arrived()
        let ticket: UInt64
        switch send(request) {
        case .failure(let error): return .failure(error)
        case .success(let sent): ticket = sent
        }
        return await withCheckedContinuation { continuation in
            if let outcome = earlyOutcomes.removeValue(forKey: ticket) {
                continuation.resume(returning: outcome)
            } else {
                confirmWaiters[ticket] = .single(continuation)
            }
        }
    }

    private func performPublish(batch requests: [PublishRequest]) async -> [Result<Void, QueueError>] {
        wakeup.arrived()
        let batch = BatchConfirmation(count: requests.count)
        var sent: [(index: Int, ticket: UInt64)] = []
        sent.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            switch send(request) {
            case .failure(let error): batch.resolve(index, .failure(error))
            case .success(let ticket): sent.append((index, ticket))
            }
        }
        guard !sent.isEmpty else { return batch.collected }
        return await withCheckedContinuation { continuation in
            batch.continuation = continuation
            for (index, ticket) in sent {
                if let outcome = earlyOutcomes.removeValue(forKey: ticket) {
                    batch.resolve(index, outcome)
                } else {
                    confirmWaiters[ticket] = .batch(batch, index: index)
                }
            }
        }
    }

    /// Sends the message and records it as awaiting its confirm; returns its ticket, or why
    /// it was not sent. A send that fails midway kills the connection (its frames may be half
    /// written); the event loop then reconnects.
    private func send(_ request: PublishRequest) -> Result<UInt64, QueueError> {
        if closing { return .failure(.closed) }
        if let terminalError { return .failure(terminalError) }
        guard let raw, raw.failure == nil else { return .failure(.notConnected(lastError: status.lastError?.description)) }
        if let blockedReason { return .failure(.brokerBlocked(reason: blockedReason)) }
        do {
            try raw.publish(request)
        } catch {
            return .failure(.confirmationUnknown(reason: error.description))
        }
        nextTicket += 1
        confirms.register(exchange: request.exchange, routingKey: request.routingKey,
                          messageID: request.message.messageID, waiter: nextTicket)
        return .success(nextTicket)
    }
}
