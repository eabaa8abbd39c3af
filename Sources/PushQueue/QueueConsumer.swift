/// The messages of one consumer, as an `AsyncSequence`.
///
/// The sequence ends after `cancel()` once the messages already delivered have been
/// yielded (settle them as usual), and throws `QueueError` if the broker cancels the
/// consumer (queue deleted) or the connection gives up. Reconnects do not end it.
/// One task iterates it; several tasks may settle the messages it yields.
///
/// Dropping the sequence or cancelling the task that iterates it cancels the consumer too;
/// messages it had buffered but not yet yielded then stay unacknowledged until the
/// connection closes, when the broker requeues them. Prefer `cancel()` and draining.
public struct QueueConsumer: AsyncSequence, Sendable {
    public typealias Element = QueueMessage

    public let queue: String
    public let consumerTag: String
    let id: UInt64
    let connection: AMQPConnection
    let stream: AsyncThrowingStream<QueueMessage, any Error>

    public func makeAsyncIterator() -> AsyncThrowingStream<QueueMessage, any Error>.AsyncIterator {
        stream.makeAsyncIterator()
    }

    /// Graceful stop: the broker stops delivering (`basic.cancel`), what it had already sent
    /// is still yielded, then the sequence ends. Unsettled messages go back to the queue
    /// when the connection closes.
    public func cancel() async {
        await connection.cancelConsumer(id)
    }
}
