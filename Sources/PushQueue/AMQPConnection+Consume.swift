extension AMQPConnection {
    /// Starts consuming `queue` with manual acknowledgement: at most `prefetch` messages are
    /// delivered and unsettled at a time.
    ///
    /// The consumer outlives reconnects: after a failure it resumes on the new connection
    /// (messages that were unsettled are redelivered, with `redelivered` set). If the
    /// connection is down when this is called, consuming starts once it is up. The queue
    /// must exist (`.channelClosedByBroker` 404 otherwise).
    public func consume(queue: String, prefetch: UInt16 = 32, consumerTag: String? = nil) async throws(QueueError) -> QueueConsumer {
        let result = await withCheckedContinuation { continuation in
            shared.mailbox.post(.consume(queue: queue, prefetch: prefetch, consumerTag: consumerTag, reply: continuation))
        }
        let handle = try result.get()
        return QueueConsumer(queue: queue, consumerTag: handle.tag, id: handle.id, connection: self, stream: handle.stream)
    }

    /// `basic.cancel`; returns once the consumer's sequence has been ended.
    func cancelConsumer(_ id: UInt64) async {
        await withCheckedContinuation { continuation in
            shared.mailbox.post(.cancelConsumer(id: id, done: continuation))
        }
    }
}
