import Foundation
import PushCrypto
import PushDelivery
import PushCleanup
import PushMetrics
import PushQueue
import PushRuntime
import PushStore

/// Builds a worker or cleanup process from its configuration: the parts, and the services
/// in the order they start (they stop in reverse: consumer first, connections last).
public struct WorkerAssembly: Sendable {
    public let services: [any Service]
    public let shutdownTimeout: Duration

    public struct AssemblyError: Error, CustomStringConvertible {
        public let description: String
    }

    /// `pushd worker`.
    public static func worker(_ configuration: WorkerConfiguration, logger: Logger) throws(AssemblyError) -> WorkerAssembly {
        let metrics = WorkerMetrics()
        let topology = Topology(prefix: configuration.topologyPrefix, retryTiers: configuration.retryTiers)
        let pool = try makePool(configuration, logger: logger)
        let consumer = try makeConnection(configuration, topology: topology, name: "worker-consume", logger: logger)
        // Publishes only what the consumer's jobs cause (retries, dead letters, chunks, events):
        // at start the consuming connection declares the queues and bindings before any job.
        let publisher = try makeConnection(
            configuration, topology: topology, scope: .exchangesUntilReconnect, name: "worker-publish", logger: logger)
        let router = try makeRouter(configuration, logger: logger)
        let registry = DeviceRegistry(pool: pool)
        let processor = JobProcessor(
            registry: registry, router: router, keys: PublicKeyCache(capacity: configuration.publicKeyCacheSize),
            limits: .init(
                encryptions: configuration.encryptionConcurrency,
                sealOnLoops: configuration.sealingThreads.sealsOnLoops(
                    loopThreads: router.loopThreadCount, cores: ProcessInfo.processInfo.activeProcessorCount),
                deliveries: configuration.maxInFlightDeliveries,
                bulkDeliveries: configuration.bulkMaxInFlightDeliveries ?? WorkerConfiguration.defaultBulkMaxInFlight,
                devicesPerRecipient: configuration.maxDevicesPerRecipient),
            metrics: metrics)
        let planner = FollowUpPlanner(retryPolicy: RetryPolicy(
            maximumAttempts: configuration.maxAttempts, maximumAge: .seconds(configuration.maxAgeSeconds), tiers: topology.retryTiers))
        let worker = WorkerService(
            consumerConnection: consumer, publisherConnection: publisher, intake: JobIntake(), processor: processor,
            planner: planner, topology: topology,
            lanes: .init(urgentPrefetch: UInt16(configuration.prefetch), bulkPrefetch: UInt16(configuration.bulkPrefetch),
                         chunkSize: configuration.chunkSize),
            reports: JobOutcomeTally(pool: pool), metrics: metrics,
            logger: logger.with(["component": "worker"]), dependencyProbe: { await registry.isReachable() })
        var services: [any Service] = []
        if let port = configuration.metricsPort {
            services.append(MetricsServer(
                registry: metrics.registry, host: configuration.metricsHost, port: port, logger: logger,
                // Not ready while paused for a PostgreSQL outage either.
                isReady: { consumer.status.isHealthy && publisher.status.isHealthy && worker.gate.isOpen }))
        }
        services += [pool] + router.services + [publisher, consumer, worker]
        return WorkerAssembly(
            services: services, shutdownTimeout: .seconds(configuration.shutdownTimeoutSeconds))
    }

    /// `pushd cleanup`.
    public static func cleanup(_ configuration: WorkerConfiguration, logger: Logger) throws(AssemblyError) -> WorkerAssembly {
        let metrics = CleanupMetrics()
        let topology = Topology(prefix: configuration.topologyPrefix, retryTiers: configuration.retryTiers)
        let pool = try makePool(configuration, logger: logger)
        let connection = try makeConnection(configuration, topology: topology, name: "cleanup", logger: logger)
        let cleanup = CleanupService(
            connection: connection, registry: DeviceRegistry(pool: pool), queue: topology.cleanupQueue,
            batchSize: configuration.cleanupBatchSize, metrics: metrics, logger: logger.with(["component": "cleanup"]))
        var services: [any Service] = []
        if let port = configuration.metricsPort {
            services.append(MetricsServer(
                registry: metrics.registry, host: configuration.metricsHost, port: port, logger: logger,
                isReady: { connection.status.isHealthy }))
        }
        services += [pool, connection, cleanup]
        return WorkerAssembly(services: services, shutdownTimeout: .seconds(configuration.shutdownTimeoutSeconds))
    }

    private static func makePool(_ configuration: WorkerConfiguration, logger: Logger) throws(AssemblyError) -> ConnectionPool {
        do {
            var store = try StoreConfiguration(url: configuration.databaseURL)
            store.poolSize = configuration.databasePoolSize
            store.poolGrowthDelay = .milliseconds(configuration.databasePoolGrowthDelayMilliseconds)
            store.preparesStatements = configuration.databasePreparedStatements
            return ConnectionPool(configuration: store, logger: logger.with(["component": "store"]))
        } catch {
            throw AssemblyError(description: "database: \(error)")
        }
    }

    private static func makeConnection(
        _ configuration: WorkerConfiguration, topology: Topology, scope: TopologyScope = .everything, name: String,
        logger: Logger
    ) throws(AssemblyError) -> AMQPConnection {
        do {
            var amqp = try AMQPConfiguration(url: configuration.amqpURL)
            amqp.connectionName = "pushd-\(name)-\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
            return try AMQPConnection(
                configuration: amqp, topology: topology, topologyMode: configuration.declareTopology ? .declare : .verify,
                topologyScope: scope, logger: logger.with(["component": .string(name)]))
        } catch {
            throw AssemblyError(description: "AMQP: \(error)")
        }
    }

    private static func makeRouter(_ configuration: WorkerConfiguration, logger: Logger) throws(AssemblyError) -> DeliveryRouter {
        let http = HTTP2Client.Configuration(
            maximumInFlight: configuration.maxInFlightDeliveries, caFile: configuration.caFile)
        do {
            let apns = try configuration.apns.map { credentials throws(DeliveryConfigurationError) in
                (client: try APNsClient(
                    configuration: .init(
                        teamID: credentials.teamID, keyID: credentials.keyID, privateKeyPEM: credentials.privateKeyPEM,
                        baseURLOverride: credentials.baseURL, http: http).withEnvironmentURLs(
                            production: credentials.productionURL, sandbox: credentials.sandboxURL),
                    logger: logger.with(["component": "apns"])),
                 bundleIDs: credentials.bundleIDs)
            }
            let fcm = try configuration.fcm.map { credentials throws(DeliveryConfigurationError) in
                try FCMClient(
                    configuration: .init(account: credentials.account, baseURLOverride: credentials.baseURL, http: http),
                    logger: logger.with(["component": "fcm"]))
            }
            return DeliveryRouter(apns: apns, fcm: fcm)
        } catch {
            throw AssemblyError(description: "delivery: \(error)")
        }
    }

    /// Runs the services until SIGTERM/SIGINT, then stops them gracefully.
    public func run(logger: Logger) async throws {
        try await ServiceGroup(services: services, gracefulShutdownTimeout: shutdownTimeout, logger: logger).run()
    }
}
