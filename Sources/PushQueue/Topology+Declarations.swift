/// What `Topology` declares, as data: the one place the queue arguments are written down in
/// Swift, compared in the tests with `Deploy/rabbitmq/definitions.json`.
public struct ExchangeDeclaration: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case direct, fanout, topic, headers
    }

    public let name: String
    public let kind: Kind
    /// Always durable, never auto-deleted, never internal, no arguments: what the
    /// definitions file holds.
    public var durable: Bool { true }
}

public struct QueueDeclaration: Sendable, Hashable {
    public let name: String
    /// Exactly the `x-…` arguments of the definitions file, no more, no fewer: a missing
    /// argument is a mismatch too.
    public let arguments: [String: HeaderValue]
    /// Always durable, non-exclusive, never auto-deleted.
    public var durable: Bool { true }
}

public struct BindingDeclaration: Sendable, Hashable {
    public let exchange: String
    public let queue: String
    public let routingKey: String
}

extension Topology {
    public var exchanges: [ExchangeDeclaration] {
        [
            ExchangeDeclaration(name: jobsExchange, kind: .direct),
            ExchangeDeclaration(name: retryExchange, kind: .direct),
            ExchangeDeclaration(name: deadExchange, kind: .fanout),
            ExchangeDeclaration(name: eventsExchange, kind: .topic),
        ]
    }

    public var queues: [QueueDeclaration] {
        // At-least-once dead-lettering keeps a message in its source queue until the target
        // has confirmed it (so a retry or dead letter survives a node failure); RabbitMQ only
        // allows it together with reject-publish overflow.
        let poisonSafe: [String: HeaderValue] = [
            "x-queue-type": "quorum",
            "x-dead-letter-exchange": .string(deadExchange),
            "x-dead-letter-strategy": "at-least-once",
            "x-overflow": "reject-publish",
            "x-delivery-limit": .int(Self.deliveryLimit),
        ]
        var queues = [
            QueueDeclaration(name: jobsQueue, arguments: poisonSafe), QueueDeclaration(name: bulkJobsQueue, arguments: poisonSafe),
            QueueDeclaration(name: retriesQueue, arguments: poisonSafe), QueueDeclaration(name: chunksQueue, arguments: poisonSafe),
        ]
        for tier in retryTiers {
            queues.append(QueueDeclaration(name: retryQueue(tier), arguments: [
                "x-queue-type": "quorum",
                "x-message-ttl": .int(Self.milliseconds(tier.delay)),
                "x-dead-letter-exchange": .string(retryExchange),
                "x-dead-letter-routing-key": .string(Self.dueRoutingKey),
                "x-dead-letter-strategy": "at-least-once",
                "x-overflow": "reject-publish",
            ]))
        }
        queues.append(QueueDeclaration(name: deadQueue, arguments: ["x-queue-type": "quorum"]))
        queues.append(QueueDeclaration(name: cleanupQueue, arguments: poisonSafe))
        return queues
    }

    public var bindings: [BindingDeclaration] {
        var bindings = [
            BindingDeclaration(exchange: jobsExchange, queue: jobsQueue, routingKey: Self.jobRoutingKey),
            BindingDeclaration(exchange: jobsExchange, queue: bulkJobsQueue, routingKey: Self.bulkRoutingKey),
            BindingDeclaration(exchange: retryExchange, queue: retriesQueue, routingKey: Self.dueRoutingKey),
            BindingDeclaration(exchange: retryExchange, queue: chunksQueue, routingKey: Self.chunkRoutingKey),
        ]
        for tier in retryTiers {
            bindings.append(BindingDeclaration(exchange: retryExchange, queue: retryQueue(tier), routingKey: tier.name))
        }
        bindings.append(BindingDeclaration(exchange: deadExchange, queue: deadQueue, routingKey: ""))
        bindings.append(BindingDeclaration(exchange: eventsExchange, queue: cleanupQueue, routingKey: Self.tokenInvalidRoutingKey))
        return bindings
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

/// What of the topology a connection declares (or verifies) when it (re)connects.
public enum TopologyScope: Sendable, Hashable {
    /// Exchanges, queues and bindings, at every connect: a connection that consumes.
    case everything
    /// The exchanges at the first connect, everything at every reconnect: a worker's
    /// publishing connection. At a process's start nothing is published before the
    /// consuming connection has declared (or verified) the queues and bindings, since every
    /// publish follows a job it delivered, so the queues and bindings, some 20 round trips,
    /// would be declared twice. At a reconnect the broker may have lost them (a node reset),
    /// jobs in flight settle through this connection, and their retries and dead letters
    /// are mandatory publishes: it declares them itself, whichever connection comes back first.
    case exchangesUntilReconnect
}

/// How a connection makes sure the topology exists when it (re)connects.
public enum TopologyMode: Sendable, Hashable {
    /// Create what is missing and verify what exists (needs configure permission).
    case declare
    /// Only check that the exchanges and queues exist (passive declares), for least-privilege
    /// users such as `pushd-worker` when operators provision the topology from the
    /// definitions file. Bindings cannot be checked passively.
    case verify
}
