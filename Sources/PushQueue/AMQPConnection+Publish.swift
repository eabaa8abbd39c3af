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
    public func publish(
        _ message: OutgoingMessage, exchange: String, routingKey: String, mandatory: Bool = true
    ) async throws(QueueError) {
        try await publish(PublishRequest(exchange: exchange, routingKey: routingKey, message: message, mandatory: mandatory))
    }

    public func publish(_ request: PublishRequest) async throws(QueueError) {
        let result = await withCheckedContinuation { continuation in
            if let refusal = shared.mailbox.post(.publish(request, continuation)) {
                continuation.resume(returning: .failure(refusal))
            }
        }
        try result.get()
    }

    /// Publishes all messages back to back, then waits for all their confirms: the fastest
    /// way to publish many. Results are in the order of `requests`; each is what `publish`
    /// would have returned for that message. Keep batches to a few thousand messages: the
    /// connection thread reads nothing while it sends a batch.
    public func publish(_ requests: [PublishRequest]) async -> [Result<Void, QueueError>] {
        guard !requests.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            if let refusal = shared.mailbox.post(.batch(requests, continuation)) {
                continuation.resume(returning: requests.map { _ in .failure(refusal) })
            }
        }
    }
}
