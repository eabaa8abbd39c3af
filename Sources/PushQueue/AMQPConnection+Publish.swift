extension AMQPConnection {
    /// Publishes one message and returns once the broker has taken responsibility for it
    /// (publisher confirm): for a persistent message to a quorum queue, once a majority of
    /// its replicas have written it.
    ///
    /// Many calls may be in flight at once (from concurrent tasks); each waits only for its
    /// own confirm. Errors: `.unroutable` (mandatory and no queue matched),
    /// `.rejectedByBroker` (nack), `.confirmationUnknown` / `.confirmTimedOut` (publish again:
    /// delivery is at least once), `.notConnected` (nothing was sent), `.brokerBlocked`,
    /// `.closed`. Cancelling the calling task does not withdraw a message already sent.
    public nonisolated func publish(
        _ message: OutgoingMessage, exchange: String, routingKey: String, mandatory: Bool = true
    ) async throws(QueueError) {
        try await publish(PublishRequest(exchange: exchange, routingKey: routingKey, message: message, mandatory: mandatory))
    }

    public nonisolated func publish(_ request: PublishRequest) async throws(QueueError) {
        let result = await withCheckedContinuation { continuation in
            if let refusal = mailbox.post(.publish(request, continuation)) {
                continuation.resume(returning: .failure(refusal))
            }
        }
        try result.get()
    }

    /// Publishes all messages back to back, then waits for all their confirms: the fastest
    /// way to publish many. Results are in the order of `requests`; each is what `publish`
    /// would have returned for that message. Keep batches to a few thousand messages: the
    /// connection thread reads nothing while it sends a batch.
    public nonisolated func publish(_ requests: [PublishRequest]) async -> [Result<Void, QueueError>] {
        guard !requests.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            if let refusal = mailbox.post(.batch(requests, continuation)) {
                continuation.resume(returning: requests.map { _ in .failure(refusal) })
            }
        }
    }

    /// Sends what callers posted: publishes (answered when their confirms arrive) and
    /// settlements. Runs on the connection thread, between reads.
    func processMailbox(_ raw: RawConnection) {
        for item in mailbox.take() {
            switch item {
            case .publish(let request, let continuation):
                switch send(request, on: raw) {
                case .failure(let error): continuation.resume(returning: .failure(error))
                case .success(let ticket): confirmWaiters[ticket] = .single(continuation)
                }
            case .batch(let requests, let continuation):
                let batch = BatchConfirmation(count: requests.count, continuation: continuation)
                for (index, request) in requests.enumerated() {
                    switch send(request, on: raw) {
                    case .failure(let error): batch.resolve(index, .failure(error))
                    case .success(let ticket): confirmWaiters[ticket] = .batch(batch, index: index)
                    }
                }
            case .settle(let tag, let generation, let action):
                // A settlement from before a reconnect (it slipped in while the mailbox was
                // reopened) would name another message on this channel.
                guard raw.failure == nil, generation == ledger.generation else { continue }
                do {
                    try raw.settle(tag, action)
                } catch {
                    // The connection died; the broker redelivers. The loop notices `failure`.
                }
            }
        }
    }

    /// Sends the message and records it as awaiting its confirm; returns its ticket, or why
    /// it was not sent. A send that fails midway kills the connection (its frames may be half
    /// written); the event loop then reconnects.
    private func send(_ request: PublishRequest, on raw: RawConnection) -> Result<UInt64, QueueError> {
        if let failure = raw.failure { return .failure(.confirmationUnknown(reason: failure.description)) }
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
