import PushCommandLine
import PushRuntime
import PushWorker

/// `pushd cleanup`: prunes the devices named by token.invalid events.
enum CleanupCommand: Subcommand {
    static let name = "cleanup"
    static let summary = "consume token.invalid events and prune stale devices"
    static let help = """
        usage: pushd cleanup [--config FILE]

        Consumes token.invalid events from the cleanup queue and deletes the devices they
        name, in batches, idempotently. A token re-registered after APNs's 410 timestamp is
        kept. Needs PUSHD_AMQP_URL and PUSHD_DATABASE_URL (or the config file); no APNs/FCM
        credentials. SIGTERM or SIGINT stops it gracefully.
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["config"])
        let logger = Logger(label: "pushd.cleanup")
        let configuration: WorkerConfiguration
        do { configuration = try WorkerConfiguration.load(file: parsed["config"], needsDelivery: false) } catch {
            throw .failure(error.description)
        }
        let assembly: WorkerAssembly
        do { assembly = try WorkerAssembly.cleanup(configuration, logger: logger) } catch { throw .failure(error.description) }
        do { try await assembly.run(logger: logger) } catch { throw .failure("cleanup stopped: \(error)") }
    }
}
