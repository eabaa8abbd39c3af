import PushCommandLine
import PushRuntime
import PushWorker

/// `pushd worker`: consumes jobs and delivers them.
enum WorkerCommand: Subcommand {
    static let name = "worker"
    static let summary = "consume notification jobs, encrypt per device, deliver to APNs and FCM"
    static let help = """
        usage: pushd worker [--config FILE]

        Runs a stateless worker: consumes jobs from RabbitMQ, resolves devices in PostgreSQL,
        seals the content for each device, delivers over HTTP/2 to APNs and FCM, publishes
        token.invalid events and schedules retries. Start as many as you like, anywhere.

        Settings come from FILE (or PUSHD_CONFIG) and environment variables, which win; see
        Deploy/config/pushd.example.json for every setting. The essentials:
          PUSHD_AMQP_URL, PUSHD_DATABASE_URL, and APNs/FCM credentials (config file, or
          PUSHD_APNS_TEAM_ID/KEY_ID/KEY_FILE/BUNDLE_IDS and PUSHD_FCM_SERVICE_ACCOUNT_FILES).
        Metrics and health: http://host:9464/metrics, /health/live, /health/ready.
        SIGTERM or SIGINT: stop taking jobs, finish those in flight, exit 0.
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        if !Allocator.isJemalloc { MallocArenas.capAtCoreCount() }
        let parsed = try ParsedArguments(arguments, options: ["config"])
        let logger = Logger(label: "pushd.worker")
        let configuration: WorkerConfiguration
        do { configuration = try WorkerConfiguration.load(file: parsed["config"]) } catch {
            throw .failure(error.description)
        }
        let assembly: WorkerAssembly
        do { assembly = try WorkerAssembly.worker(configuration, logger: logger) } catch { throw .failure(error.description) }
        logger.info("worker starting", [
            "apns_bundles": .string(configuration.apns.flatMap(\.bundleIDs).joined(separator: ",")),
            "fcm_projects": .string(configuration.fcm.map(\.account.projectID).joined(separator: ",")),
            "prefetch": .int(configuration.prefetch), "max_in_flight": .int(configuration.maxInFlightDeliveries),
            "allocator": .string(Allocator.name),
        ])
        do { try await assembly.run(logger: logger) } catch { throw .failure("worker stopped: \(error)") }
        logger.info("worker stopped")
    }
}
