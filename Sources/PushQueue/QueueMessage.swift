/// A message delivered to a consumer, to be settled exactly once with `ack`, `nack` or
/// `reject`.
///
/// Settling goes back to the connection that delivered it. Delivery tags only mean something
/// on the channel that issued them, so if that connection has died in the meantime settling
/// does nothing (`Settlement.stale`): the broker has already put the message back and will
/// deliver it again, with `redelivered` set.
public struct QueueMessage: Sendable {
    public let body: [UInt8]
    public let headers: [String: HeaderValue]
    public let messageID: String?
    public let contentType: String?
    public let correlationID: String?
    /// Seconds since the Unix epoch, if the publisher set it.
    public let timestamp: UInt64?
    public let persistent: Bool
    public let exchange: String
    public let routingKey: String
    /// The queue it was consumed from.
    public let queue: String
    public let deliveryTag: UInt64
    /// Set by the broker when this message was delivered before and not acknowledged.
    public let redelivered: Bool

    let origin: DeliveryOrigin

    /// How many times a quorum queue has returned this message (`x-delivery-count`); nil on
    /// the first delivery.
    public var deliveryCount: Int64? { headers["x-delivery-count"]?.intValue }

    /// Done: the broker forgets the message. Returns at once; the ack is sent with the
    /// connection thread's next turn (`async` leaves room for back-pressure later).
    @discardableResult
    public func ack() async -> Settlement {
        origin.connection.settle(deliveryTag, generation: origin.generation, .ack)
    }

    /// Not done. `requeue: true` puts it back for another consumer (counted against the
    /// queue's delivery limit); `false` dead-letters it.
    @discardableResult
    public func nack(requeue: Bool) async -> Settlement {
        origin.connection.settle(deliveryTag, generation: origin.generation, requeue ? .requeue : .deadLetter)
    }

    /// Can never succeed: dead-letter it (`basic.reject` without requeue); the dead letter
    /// carries `x-death` with reason `rejected`.
    @discardableResult
    public func reject() async -> Settlement {
        origin.connection.settle(deliveryTag, generation: origin.generation, .reject)
    }
}

/// What became of an `ack`, `nack` or `reject`.
public enum Settlement: Sendable, Hashable {
    /// Accepted for the channel that delivered the message; the connection thread sends it
    /// on its next turn. (Should that channel die first, the broker redelivers the message,
    /// as it would had the ack been lost on the wire.)
    case settled
    /// That channel is gone; the broker will redeliver the message. Nothing was sent.
    case stale
    /// The message was settled before; nothing was sent (a second settlement would make the
    /// broker close the channel).
    case alreadySettled
}

/// Which connection, and which incarnation of its channel, delivered a message.
struct DeliveryOrigin: Sendable {
    let connection: ConnectionShared
    let generation: UInt64
}

/// The AMQP method a settlement sends.
enum SettleAction: Sendable {
    case ack
    case requeue
    case deadLetter
    case reject
}
