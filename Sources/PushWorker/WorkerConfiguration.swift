import Foundation
import PushDelivery
import PushModel
import PushQueue

/// Everything `pushd worker` and `pushd cleanup` need, from an optional JSON file
/// (`--config` / `PUSHD_CONFIG`) overlaid by environment variables. Secrets (the `.p8` key,
/// service accounts, passwords in URLs) come from files or the environment and are never
/// logged. `Deploy/config/pushd.example.json` documents every setting.
public struct WorkerConfiguration: Sendable {
    public struct APNsCredentials: Sendable {
        public var teamID: String
        public var keyID: String
        /// PEM of the `.p8` key, loaded from `key_file` or the variable named by `key_env`.
        public var privateKeyPEM: String
        public var bundleIDs: [String]
        /// Both environments' host (the emulator); each of the two below wins for its own.
        public var baseURL: String?
        public var productionURL: String?
        public var sandboxURL: String?
    }

    public struct FCMCredentials: Sendable {
        public var account: FCMServiceAccount
        public var baseURL: String?
    }

    public var amqpURL: String
    public var databaseURL: String
    public var topologyPrefix = "pushd"
    /// Declare the queues and exchanges at start (needs configure rights); otherwise only
    /// check that they exist (for the least-privilege production user).
    public var declareTopology = true
    /// Urgent-lane jobs a worker holds at once (`prefetch` of `<prefix>.jobs`).
    public var prefetch = 32
    /// Bulk-lane jobs a worker holds at once (`<prefix>.jobs.bulk`), apart from `prefetch`,
    /// so bulk can never take an urgent job's place.
    public var bulkPrefetch = 4
    /// Jobs with more recipients are split into chunk jobs of this many on the bulk lane.
    public var chunkSize = 500
    /// Pushes of bulk jobs in flight at once (at most `max_in_flight_deliveries`); the rest
    /// stays free for urgent jobs. Every bulk push in flight is one an urgent push may queue
    /// behind (in the HTTP/2 connection, at APNs/FCM, for a core to seal it), so this is
    /// small: 100 (`defaultBulkMaxInFlight`) keeps a connection busy while the urgent p99
    /// under a bulk backlog stays a few hundred milliseconds on a 2-core machine.
    public var bulkMaxInFlightDeliveries: Int?
    public static let defaultBulkMaxInFlight = 100
    public var maxInFlightDeliveries = 1000
    /// Device keys kept parsed (least recently used dropped first). Each costs about
    /// 3.3 KiB resident (the parsed key, its OAEP context, its text; `pushd bench crypto`),
    /// so the default bounds the cache near 33 MiB; a miss costs one parse.
    public var publicKeyCacheSize = 10_000
    public var encryptionConcurrency = ProcessInfo.processInfo.activeProcessorCount
    /// Where envelopes are sealed (`sealing_threads`).
    public var sealingThreads = SealingThreads.auto
    public var databasePoolSize = 4
    /// Milliseconds a lookup waits for a busy connection before the pool opens another (see
    /// `StoreConfiguration.poolGrowthDelay`); 0 opens one for every waiting lookup at once.
    public var databasePoolGrowthDelayMilliseconds = 100
    /// Device lookups prepared once per PostgreSQL session (off behind a pooler that cannot
    /// carry prepared statements; see `StoreConfiguration.preparesStatements`).
    public var databasePreparedStatements = true
    public var metricsHost = "0.0.0.0"
    /// nil disables the metrics endpoint.
    public var metricsPort: Int? = 9464
    public var maxAttempts = 8
    /// Devices one recipient may have per job; the most recently registered win, and
    /// `pushd_recipients_capped_total` counts the recipients that had more.
    public var maxDevicesPerRecipient = 20
    public var maxAgeSeconds = 86_400
    public var shutdownTimeoutSeconds = 30
    public var cleanupBatchSize = 200
    /// The retry delay tiers (`5s,30s,2m,10m,1h` in production). Each is a queue whose TTL is
    /// fixed when declared, so changing them needs a new topology prefix.
    public var retryTiers: [Topology.RetryTier] = Topology.RetryTier.standard
    /// A CA bundle that APNs/FCM servers are verified against instead of the system's (the
    /// local emulator). Verification is never turned off.
    public var caFile: String?
    /// Allows `amqp://` and PostgreSQL without TLS to hosts that are not loopback. Off by
    /// default: credentials, tokens and keys would cross the network in clear text.
    public var allowInsecureTransport = false
    public var apns: [APNsCredentials] = []
    public var fcm: [FCMCredentials] = []

    /// Every problem found, one line each, so an operator fixes them in one go.
    public struct Problems: Error, CustomStringConvertible {
        public let problems: [String]
        public var description: String {
            "invalid configuration:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
        }
    }

    /// Reads the file (if any) then the environment; `needsDelivery` is false for the
    /// cleanup consumer, which needs no APNs/FCM credentials, and `needsDatabase` false for
    /// `pushd enqueue`, which publishes only.
    public static func load(
        file: String?, environment: [String: String] = ProcessInfo.processInfo.environment, needsDelivery: Bool = true,
        needsDatabase: Bool = true
    ) throws(Problems) -> WorkerConfiguration {
        var reader = ConfigurationReader(environment: environment)
        let path = file ?? environment["PUSHD_CONFIG"]
        if let path { reader.loadFile(path) }
        var configuration = WorkerConfiguration(
            amqpURL: reader.string("amqp_url", env: "PUSHD_AMQP_URL", required: true) ?? "",
            databaseURL: reader.string("database_url", env: "PUSHD_DATABASE_URL", required: needsDatabase) ?? "")
        configuration.allowInsecureTransport = reader.bool("allow_insecure_transport", env: "PUSHD_ALLOW_INSECURE_TRANSPORT") ?? false
        configuration.topologyPrefix = reader.string("topology_prefix", env: "PUSHD_TOPOLOGY_PREFIX") ?? "pushd"
        configuration.declareTopology = reader.bool("declare_topology", env: "PUSHD_DECLARE_TOPOLOGY") ?? true
        configuration.prefetch = reader.int("prefetch", env: "PUSHD_PREFETCH", range: 1...1000) ?? 32
        configuration.bulkPrefetch = reader.int("bulk_prefetch", env: "PUSHD_BULK_PREFETCH", range: 1...1000) ?? 4
        configuration.chunkSize = reader.int("chunk_size", env: "PUSHD_CHUNK_SIZE", range: 1...NotificationJob.maximumRecipients) ?? 500
        configuration.bulkMaxInFlightDeliveries = reader.int(
            "bulk_max_in_flight_deliveries", env: "PUSHD_BULK_MAX_IN_FLIGHT", range: 1...100_000)
        configuration.maxInFlightDeliveries = reader.int("max_in_flight_deliveries", env: "PUSHD_MAX_IN_FLIGHT", range: 1...100_000) ?? 1000
        configuration.publicKeyCacheSize = reader.int(
            "public_key_cache_size", env: "PUSHD_PUBLIC_KEY_CACHE_SIZE", range: 1...10_000_000) ?? 10_000
        if let text = reader.string("sealing_threads", env: "PUSHD_SEALING_THREADS") {
            if let parsed = SealingThreads(rawValue: text) { configuration.sealingThreads = parsed } else {
                reader.problem("sealing_threads must be auto, pool or loops, got \"\(text)\"")
            }
        }
        configuration.encryptionConcurrency = reader.int("encryption_concurrency", env: "PUSHD_ENCRYPTION_CONCURRENCY", range: 1...1024)
            ?? ProcessInfo.processInfo.activeProcessorCount
        configuration.databasePoolSize = reader.int("database_pool_size", env: "PUSHD_DATABASE_POOL_SIZE", range: 1...200) ?? 4
        configuration.databasePoolGrowthDelayMilliseconds = reader.int(
            "database_pool_growth_delay_ms", env: "PUSHD_DATABASE_POOL_GROWTH_DELAY_MS", range: 0...10_000) ?? 100
        configuration.databasePreparedStatements = reader.bool(
            "database_prepared_statements", env: "PUSHD_DATABASE_PREPARED_STATEMENTS") ?? true
        configuration.metricsHost = reader.string("metrics_host", env: "PUSHD_METRICS_HOST") ?? "0.0.0.0"
        let metricsPort = reader.int("metrics_port", env: "PUSHD_METRICS_PORT", range: 0...65535) ?? 9464
        configuration.metricsPort = metricsPort == 0 ? nil : metricsPort
        configuration.maxDevicesPerRecipient = reader.int(
            "max_devices_per_recipient", env: "PUSHD_MAX_DEVICES_PER_RECIPIENT", range: 1...10_000) ?? 20
        configuration.maxAttempts = reader.int("max_attempts", env: "PUSHD_MAX_ATTEMPTS", range: 1...100) ?? 8
        configuration.maxAgeSeconds = reader.int("max_age_seconds", env: "PUSHD_MAX_AGE_SECONDS", range: 1...2_419_200) ?? 86_400
        configuration.shutdownTimeoutSeconds = reader.int("shutdown_timeout_seconds", env: "PUSHD_SHUTDOWN_TIMEOUT_SECONDS", range: 1...3600) ?? 30
        configuration.cleanupBatchSize = reader.int("cleanup_batch_size", env: "PUSHD_CLEANUP_BATCH_SIZE", range: 1...5000) ?? 200
        if let tiers = reader.string("retry_tiers", env: "PUSHD_RETRY_TIERS") {
            if let parsed = Self.parseTiers(tiers) { configuration.retryTiers = parsed } else {
                reader.problem("retry_tiers must be increasing durations like \"5s,30s,2m,10m,1h\", got \"\(tiers)\"")
            }
        }
        configuration.caFile = reader.string("ca_file", env: "PUSHD_CA_FILE")
        if let caFile = configuration.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            reader.problem("ca_file \(caFile) is not readable")
        }
        configuration.apns = reader.apnsCredentials()
        configuration.fcm = reader.fcmCredentials()
        if needsDelivery && configuration.apns.isEmpty && configuration.fcm.isEmpty {
            reader.problem("no APNs or FCM credentials: add \"apns\"/\"fcm\" entries to the config file or set PUSHD_APNS_* / PUSHD_FCM_SERVICE_ACCOUNT_FILES")
        }
        for problem in configuration.transportProblems(needsDatabase: needsDatabase) { reader.problem(problem) }
        let bundles = configuration.apns.flatMap(\.bundleIDs)
        for bundle in Set(bundles) where bundles.filter({ $0 == bundle }).count > 1 {
            reader.problem("bundle id \(bundle) is configured for more than one APNs key")
        }
        guard reader.problems.isEmpty else { throw Problems(problems: reader.problems) }
        return configuration
    }

    /// "5s,30s,2m" → tiers named as written, with those delays.
    static func parseTiers(_ text: String) -> [Topology.RetryTier]? {
        var tiers: [Topology.RetryTier] = []
        for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard let unit = part.last, let number = Int(part.dropLast()), number > 0 else { return nil }
            let seconds: Int
            switch unit {
            case "s": seconds = number
            case "m": seconds = number * 60
            case "h": seconds = number * 3600
            default: return nil
            }
            if let last = tiers.last, last.delay >= .seconds(seconds) { return nil }
            tiers.append(Topology.RetryTier(name: part, delay: .seconds(seconds)))
        }
        return tiers.isEmpty ? nil : tiers
    }

    init(amqpURL: String, databaseURL: String) {
        self.amqpURL = amqpURL
        self.databaseURL = databaseURL
    }
}

/// Which threads seal a batch's envelopes.
///
/// On the HTTP/2 loop threads, a push is sealed, built and sent by one thread, which costs
/// less CPU than sealing on the pool and handing the push over (2–4 µs per push; see
/// `NativeHTTP2Loop`), but only as many threads seal as there are loops: one per APNs or FCM
/// client. So the loops are right when they are about as many as the cores, the pool when
/// there are more cores to seal on.
public enum SealingThreads: String, Sendable {
    /// The loops when the machine has no more cores than the clients have loop threads
    /// (a worker with an APNs and an FCM client on two cores), the pool otherwise.
    case auto
    /// The cooperative pool, `encryption_concurrency` tasks per batch.
    case pool
    /// The loop thread of the client that sends each push (the pool for a client without one).
    case loops

    /// Whether to seal on the loops, with `loopThreads` of them on `cores` cores.
    public func sealsOnLoops(loopThreads: Int, cores: Int) -> Bool {
        switch self {
        case .auto: loopThreads > 0 && cores <= loopThreads
        case .pool: false
        case .loops: loopThreads > 0
        }
    }
}
