/// What can go wrong between pushd and RabbitMQ, each with what the caller can do about it.
///
/// Reply codes and texts from the broker are kept verbatim: they name the queue or argument
/// at fault, and unknown codes are preserved rather than mapped away.
public enum QueueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The AMQP URL cannot be used. `url` is already redacted.
    case invalidURL(url: String, reason: String)
    /// A configuration value is out of range or contradictory.
    case invalidConfiguration(String)
    /// The TCP connection could not be made (DNS, refused, timed out).
    case connectFailed(endpoint: String, reason: String)
    /// The TLS handshake or the verification of the broker's certificate or name failed.
    case tlsFailed(endpoint: String, reason: String)
    /// The broker refused the credentials or the virtual host.
    case loginRefused(user: String, virtualHost: String, reason: String)
    /// The broker closed the connection (`connection.close`), e.g. 320 on shutdown.
    case connectionClosedByBroker(replyCode: UInt16, replyText: String)
    /// The broker closed the channel (`channel.close`), e.g. 404 for a missing exchange.
    case channelClosedByBroker(replyCode: UInt16, replyText: String)
    /// A declaration differs from what exists on the broker (406 PRECONDITION_FAILED).
    case topologyMismatch(replyText: String)
    /// The socket failed or the broker stopped answering heartbeats.
    case connectionLost(reason: String)
    /// The connection is down and reconnecting; the operation was not attempted.
    case notConnected(lastError: String?)
    /// The connection was closed with `close()`; nothing more can be sent on it.
    case closed
    /// A `mandatory` message matched no queue; the broker returned it.
    case unroutable(exchange: String, routingKey: String, replyCode: UInt16, replyText: String)
    /// The broker refused responsibility for a message (`basic.nack`), typically a queue at its
    /// length limit with `x-overflow: reject-publish`.
    case rejectedByBroker(exchange: String, routingKey: String)
    /// The connection died after the message was sent and before the broker confirmed it:
    /// it may or may not have been taken. Publishing again is safe for idempotent consumers.
    case confirmationUnknown(reason: String)
    /// No confirm arrived within the configured time (e.g. a quorum queue without a majority).
    case confirmTimedOut(milliseconds: Int64)
    /// The broker has blocked publishing (memory or disk alarm).
    case brokerBlocked(reason: String)
    /// The broker cancelled a consumer, e.g. because its queue was deleted.
    case consumerCancelledByBroker(queue: String)
    /// An operation did not finish in time.
    case timedOut(String)
    /// rabbitmq-c reported an error that fits none of the above.
    case library(operation: String, status: Int32, message: String)

    /// Whether trying again later (after a reconnect) can succeed without changing anything.
    public var isRetryable: Bool {
        switch self {
        case .connectFailed, .connectionLost, .notConnected, .confirmationUnknown, .confirmTimedOut,
             .rejectedByBroker, .brokerBlocked, .timedOut, .library:
            return true
        case .connectionClosedByBroker(let code, _), .channelClosedByBroker(let code, _):
            // 320 CONNECTION_FORCED (broker shutting down), 505/506/541 transient server states.
            return [320, 505, 506, 541].contains(code)
        case .invalidURL, .invalidConfiguration, .tlsFailed, .loginRefused, .topologyMismatch, .closed,
             .unroutable, .consumerCancelledByBroker:
            return false
        }
    }

    /// The AMQP reply code, when the broker gave one.
    public var replyCode: UInt16? {
        switch self {
        case .connectionClosedByBroker(let code, _), .channelClosedByBroker(let code, _), .unroutable(_, _, let code, _):
            return code
        case .topologyMismatch:
            return 406
        default:
            return nil
        }
    }

    public var description: String {
        switch self {
        case .invalidURL(let url, let reason):
            return "invalid AMQP URL \(url): \(reason) (expected amqp[s]://user:password@host:port/vhost)"
        case .invalidConfiguration(let what):
            return "invalid AMQP configuration: \(what)"
        case .connectFailed(let endpoint, let reason):
            return "cannot connect to RabbitMQ at \(endpoint): \(reason); is the broker running and reachable?"
        case .tlsFailed(let endpoint, let reason):
            return "TLS with RabbitMQ at \(endpoint) failed: \(reason); check the CA file and that the certificate names this host"
        case .loginRefused(let user, let vhost, let reason):
            return "RabbitMQ refused login of user \"\(user)\" to vhost \"\(vhost)\": \(reason); check the credentials and the user's vhost permissions"
        case .connectionClosedByBroker(let code, let text):
            return "RabbitMQ closed the connection: \(code) \(text)"
        case .channelClosedByBroker(let code, let text):
            return "RabbitMQ closed the channel: \(code) \(text)"
        case .topologyMismatch(let text):
            return "RabbitMQ already has this exchange or queue with different settings: \(text); compare with Deploy/rabbitmq/definitions.json (queue arguments cannot change in place: drain and delete the queue, or fix the declaration)"
        case .connectionLost(let reason):
            return "connection to RabbitMQ lost: \(reason); reconnecting"
        case .notConnected(let lastError):
            return "not connected to RabbitMQ (reconnecting)" + (lastError.map { "; last error: \($0)" } ?? "")
        case .closed:
            return "the AMQP connection has been closed"
        case .unroutable(let exchange, let key, let code, let text):
            return "message to exchange \"\(exchange)\" with routing key \"\(key)\" matched no queue (\(code) \(text)); check the bindings"
        case .rejectedByBroker(let exchange, let key):
            return "RabbitMQ refused the message to exchange \"\(exchange)\" with routing key \"\(key)\" (basic.nack: queue full with reject-publish, or an internal error); retry later"
        case .confirmationUnknown(let reason):
            return "publish not confirmed before the connection failed (\(reason)); the message may or may not have been taken: publish again"
        case .confirmTimedOut(let ms):
            return "RabbitMQ did not confirm the message within \(ms) ms (is the queue's quorum available?); publish again"
        case .brokerBlocked(let reason):
            return "RabbitMQ is blocking publishers (\(reason)): a memory or disk alarm; free resources, then retry"
        case .consumerCancelledByBroker(let queue):
            return "RabbitMQ cancelled the consumer of queue \"\(queue)\" (queue deleted or its leader lost)"
        case .timedOut(let what):
            return "timed out: \(what)"
        case .library(let operation, let status, let message):
            return "rabbitmq-c \(operation) failed: \(message) (status \(status))"
        }
    }
}
