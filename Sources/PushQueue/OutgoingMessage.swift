/// A message to publish. Persistent unless said otherwise: jobs and events must survive a
/// broker restart, and a confirm for a persistent message to a quorum queue means it is on a
/// majority of disks.
public struct OutgoingMessage: Sendable, Equatable {
    public var body: [UInt8]
    public var contentType: String?
    /// The producer's id for the message, kept by the broker and shown to consumers; pushd
    /// uses the job id, so duplicates from at-least-once delivery can be recognised.
    public var messageID: String?
    /// Application headers (`x-pushd-reason` on dead letters, retry metadata).
    public var headers: [String: HeaderValue]
    /// AMQP delivery mode 2 (persistent) or 1.
    public var persistent: Bool
    public var correlationID: String?
    /// Per-message time to live (AMQP `expiration`, whole milliseconds); the queue's own TTL
    /// applies too, whichever is shorter.
    public var expiration: Duration?
    /// Seconds since the Unix epoch.
    public var timestamp: UInt64?
    public var type: String?
    public var appID: String?

    public init(
        body: some Sequence<UInt8>, contentType: String? = nil, messageID: String? = nil,
        headers: [String: HeaderValue] = [:], persistent: Bool = true, timestamp: UInt64? = nil
    ) {
        self.body = Array(body)
        self.contentType = contentType
        self.messageID = messageID
        self.headers = headers
        self.persistent = persistent
        self.timestamp = timestamp
    }
}

/// One message and where it goes, for `AMQPConnection.publish(_:)` batches.
public struct PublishRequest: Sendable, Equatable {
    public var exchange: String
    public var routingKey: String
    public var message: OutgoingMessage
    /// Ask the broker to return the message if no queue matches, so it is reported as
    /// `QueueError.unroutable` instead of silently dropped. On by default.
    public var mandatory: Bool

    public init(exchange: String, routingKey: String, message: OutgoingMessage, mandatory: Bool = true) {
        self.exchange = exchange
        self.routingKey = routingKey
        self.message = message
        self.mandatory = mandatory
    }
}
