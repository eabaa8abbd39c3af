extension AMQPConnectionStateMachine {
    // MARK: Consumers

    /// A new consumer: its id and tag, or why not. `startNow` says whether to send
    /// `basic.consume` now (connected) or leave it to the next connect. Record it with
    /// `addConsumer` once started.
    mutating func planConsumer(
        queue: String, prefetch: UInt16, consumerTag: String?, connectionName: String
    ) -> Result<(spec: ConsumerSpec, startNow: Bool), QueueError> {
        if let refusal { return .failure(refusal) }
        guard prefetch > 0 else { return .failure(.invalidConfiguration("prefetch must be at least 1 (0 would mean unlimited)")) }
        nextConsumerID += 1
        let id = nextConsumerID
        let tag = consumerTag ?? "\(connectionName).\(queue).\(id)"
        guard consumerIDsByTag[tag] == nil else { return .failure(.invalidConfiguration("consumer tag \"\(tag)\" is already in use")) }
        return .success((ConsumerSpec(id: id, queue: queue, tag: tag, prefetch: prefetch), isConnected))
    }

    mutating func addConsumer(_ spec: ConsumerSpec, consumer: Consumer, active: Bool) {
        consumers[spec.id] = ConsumerRecord(id: spec.id, queue: spec.queue, tag: spec.tag, prefetch: spec.prefetch,
                                            consumer: consumer, active: active && isConnected)
        consumerIDsByTag[spec.tag] = spec.id
    }

    /// Forgets the consumer; returns it to be ended (nil if already forgotten).
    mutating func removeConsumer(_ id: UInt64) -> Consumer? {
        guard let record = consumers.removeValue(forKey: id) else { return nil }
        consumerIDsByTag.removeValue(forKey: record.tag)
        return record.consumer
    }

    /// Who a delivery with this consumer tag is for.
    func consumer(tag: String) -> ConsumerRecord? {
        consumerIDsByTag[tag].flatMap { consumers[$0] }
    }

    /// The broker cancelled the consumer (its queue was deleted): forget it and return it.
    mutating func consumerCancelledByBroker(tag: String) -> ConsumerRecord? {
        guard let record = consumer(tag: tag) else { return nil }
        _ = removeConsumer(record.id)
        return record
    }
}
