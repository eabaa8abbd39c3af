/// pushd's exchanges, queues and bindings, under a name prefix.
///
/// Production uses the prefix `pushd` (`Topology.production`), matching
/// `Deploy/rabbitmq/definitions.json` argument for argument, so whichever of the definitions
/// import and a starting worker comes first creates the objects and the other finds them
/// identical (RabbitMQ answers any difference with 406 PRECONDITION_FAILED). Tests and
/// benchmarks use a unique prefix and their own retry tiers, and delete what they declared.
public struct Topology: Sendable, Hashable {
    /// A delayed-retry queue: a message published to `retryExchange` with the tier's name as
    /// routing key waits there for `delay`, then is dead-lettered back to `retryExchange`
    /// with `dueRoutingKey`, into `retriesQueue`.
    public struct RetryTier: Sendable, Hashable {
        public let name: String
        public let delay: Duration

        public init(name: String, delay: Duration) {
            self.name = name
            self.delay = delay
        }

        /// The production tiers: 5 s, 30 s, 2 min, 10 min, 1 h.
        public static let standard: [RetryTier] = [
            RetryTier(name: "5s", delay: .seconds(5)),
            RetryTier(name: "30s", delay: .seconds(30)),
            RetryTier(name: "2m", delay: .seconds(120)),
            RetryTier(name: "10m", delay: .seconds(600)),
            RetryTier(name: "1h", delay: .seconds(3600)),
        ]
    }

    /// Routing key of jobs on `jobsExchange` (the urgent lane, `jobsQueue`).
    public static let jobRoutingKey = "job"
    /// Routing key of bulk-lane jobs on `jobsExchange` (`bulkJobsQueue`), and of chunks.
    public static let bulkRoutingKey = "bulk"
    /// Routing key under which a retry whose delay has passed goes from its tier queue back
    /// to `retryExchange`, and on to `retriesQueue`.
    public static let dueRoutingKey = "due"
    /// Routing key of split jobs' chunks on `retryExchange` (which only workers may write), into
    /// `chunksQueue`.
    public static let chunkRoutingKey = "chunk"
    /// Routing key of the event the cleanup consumer acts on.
    public static let tokenInvalidRoutingKey = "token.invalid"
    /// Redeliveries after which the broker dead-letters a job or event instead of requeueing
    /// it again (`x-delivery-limit`): a message that crashes its consumer cannot loop forever.
    public static let deliveryLimit: Int64 = 20

    public let prefix: String
    public let retryTiers: [RetryTier]

    public init(prefix: String = "pushd", retryTiers: [RetryTier] = RetryTier.standard) {
        self.prefix = prefix
        self.retryTiers = retryTiers
    }

    public static let production = Topology()

    public var jobsExchange: String { "\(prefix).jobs" }
    /// The urgent lane (the queue every job used before lanes existed, kept under its name
    /// so an upgrade needs no queue migration).
    public var jobsQueue: String { "\(prefix).jobs" }
    /// The bulk lane: its own quorum queue, consumed by every worker with its own prefetch.
    public var bulkJobsQueue: String { "\(prefix).jobs.bulk" }
    /// Only workers may publish here (`definitions.production.json`): what arrives through it
    /// is the only place retry state is trusted.
    public var retryExchange: String { "\(prefix).retry" }
    /// Retries whose delay has passed, consumed by workers next to `jobsQueue`. Producers can
    /// neither publish to it nor to `retryExchange`, so a job carrying retry state that
    /// arrives on `jobsQueue` is forged and dead-lettered.
    public var retriesQueue: String { "\(prefix).retries" }
    /// Chunks of split jobs, published by workers through `retryExchange`: producers cannot
    /// write there, so chunk state (like retry state) is trusted only on this queue. Consumed
    /// with the bulk lane's prefetch.
    public var chunksQueue: String { "\(prefix).chunks" }
    public var deadExchange: String { "\(prefix).dead" }
    public var deadQueue: String { "\(prefix).dead" }
    public var eventsExchange: String { "\(prefix).events" }
    public var cleanupQueue: String { "\(prefix).cleanup" }

    public func retryQueue(_ tier: RetryTier) -> String { "\(prefix).retry.\(tier.name)" }

    /// The tier with this name, for routing keys read back from configuration or headers.
    public func retryTier(named name: String) -> RetryTier? {
        retryTiers.first { $0.name == name }
    }
}
