extension AMQPConnection {
    /// Starts consuming `queue` with manual acknowledgement: at most `prefetch` messages are
    /// delivered and unsettled at a time.
    ///
    /// The consumer outlives reconnects: after a failure it resumes on the new connection
    /// (messages that were unsettled are redelivered, with `redelivered` set). If the
    /// connection is down when this is called, consuming starts once it is up. The queue
    /// must exist (`.channelClosedByBroker` 404 otherwise).
    public nonisolated func consume(queue: String, prefetch: UInt16 = 32, consumerTag: String? = nil) async throws(QueueError) -> QueueConsumer {
        wakeup.announce()
        return try await performConsume(queue: queue, prefetch: prefetch, consumerTag: consumerTag)
    }

    private func performConsume(queue: String, prefetch: UInt16, consumerTag: String?) throws(QueueError) -> QueueConsumer {
        wakeup.arrived()
        if closing { throw .closed }
        if let terminalError { throw terminalError }
        guard prefetch > 0 else { throw .invalidConfiguration("prefetch must be at least 1 (0 would mean unlimited)") }
        nextConsumerID += 1
        let id = nextConsumerID
        let tag = consumerTag ?? "\(configuration.connectionName).\(queue).\(id)"
        guard consumerIDsByTag[tag] == nil else { throw .invalidConfiguration("consumer tag \"\(tag)\" is already in use") }
        if let raw, raw.failure == nil {
            // A missing queue closes only the admin channel here, not the one carrying
            // every other consumer's deliveries.
            _ = try raw.inspect(queue: queue)
            try raw.consume(queue: queue, consumerTag: tag, prefetch: prefetch)
        }
        let (stream, continuation) = AsyncThrowingStream<QueueMessage, any Error>.makeStream()
        // The sequence ended: dropped, its task cancelled, or finished by us. Stop the
        // broker's deliveries to it (a no-op if already stopped).
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.cancelConsumer(id) }
        }
        consumers[id] = ConsumerRecord(id: id, queue: queue, tag: tag, prefetch: prefetch, continuation: continuation,
                                       active: raw?.failure == nil && raw != nil)
        consumerIDsByTag[tag] = id
        logger.info("amqp consuming", ["queue": .string(queue), "consumer_tag": .string(tag), "prefetch": .int(Int(prefetch))])
        return QueueConsumer(queue: queue, consumerTag: tag, id: id, connection: self, stream: stream)
    }

    nonisolated func cancelConsumer(_ id: UInt64) async {
        wakeup.announce()
        await performCancel(id)
    }

    private func performCancel(_ id: UInt64) {
        wakeup.arrived()
        stopConsumer(id)
    }

    /// `basic.cancel`, then hands the consumer every delivery that arrived before the
    /// broker's cancel-ok, then ends its sequence. The caller can still settle those.
    func stopConsumer(_ id: UInt64) {
        guard let record = consumers[id] else { return }
        if record.active, let raw, raw.failure == nil {
            do {
                try raw.cancel(consumerTag: record.tag)
                try handleQueuedEvents()
            } catch {
                // The connection failed; the event loop reconnects without this consumer.
                logger.warning("amqp consumer cancel failed", ["queue": .string(record.queue), "error": .string(error.description)])
            }
        }
        finishConsumer(id, error: nil)
    }

    /// Forgets the consumer and ends its sequence, with `error` if given.
    func finishConsumer(_ id: UInt64, error: QueueError?) {
        guard let record = consumers.removeValue(forKey: id) else { return }
        consumerIDsByTag.removeValue(forKey: record.tag)
        if let error {
            record.continuation.finish(throwing: error)
        } else {
            record.continuation.finish()
        }
    }

    /// Hands a delivery to its consumer. One nobody wants any more goes straight back to the
    /// queue (a requeue, not a dead letter).
    func dispatch(_ delivery: InboundDelivery) throws(QueueError) {
        guard let raw else { return }
        guard let id = consumerIDsByTag[delivery.consumerTag], let record = consumers[id] else {
            try raw.settle(delivery.deliveryTag, .requeue)
            return
        }
        ledger.delivered(delivery.deliveryTag)
        let properties = delivery.properties
        let message = QueueMessage(
            body: delivery.body, headers: properties.headers, messageID: properties.messageID,
            contentType: properties.contentType, correlationID: properties.correlationID, timestamp: properties.timestamp,
            persistent: properties.persistent, exchange: delivery.exchange, routingKey: delivery.routingKey,
            queue: record.queue, deliveryTag: delivery.deliveryTag, redelivered: delivery.redelivered,
            origin: DeliveryOrigin(connection: self, generation: ledger.generation))
        if case .terminated = record.continuation.yield(message) {
            _ = ledger.settle(delivery.deliveryTag, generation: ledger.generation)
            try raw.settle(delivery.deliveryTag, .requeue)
        }
    }

    /// Settles a delivery if — and only if — the channel that delivered it is still the
    /// current one and it was not settled before; the ack itself goes out with the
    /// connection thread's next turn. Decided here, on the caller's thread, without waiting.
    nonisolated func settle(_ deliveryTag: UInt64, generation: UInt64, _ action: SettleAction) -> Settlement {
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

    private nonisolated func logStaleSettlement(_ deliveryTag: UInt64, _ generation: UInt64, _ action: SettleAction) {
        logger.info("amqp settlement of a message from a dead connection ignored; the broker redelivers it", [
            "delivery_tag": .int(Int(truncatingIfNeeded: deliveryTag)), "generation": .int(Int(truncatingIfNeeded: generation)),
            "action": .string("\(action)"),
        ])
    }
}
