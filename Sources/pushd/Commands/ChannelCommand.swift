import PushCommandLine
import PushDelivery
import PushRuntime
import PushWorker

/// `pushd channel`: APNs broadcast channels (iOS 18) for Live Activity broadcasts, created,
/// read, listed and deleted against Apple's channel-management API with the worker's APNs
/// credentials.
enum ChannelCommand: Subcommand {
    static let name = "channel"
    static let summary = "APNs broadcast channels for Live Activities: channel create | list | read | delete"
    static let help = """
        usage: pushd channel create --app BUNDLE [--environment E] [--storage 0|1] [--config FILE]
               pushd channel list   --app BUNDLE [--environment E] [--config FILE]
               pushd channel read   --app BUNDLE [--environment E] --channel-id ID [--config FILE]
               pushd channel delete --app BUNDLE [--environment E] --channel-id ID [--config FILE]

          create   prints channel_id=<base64 id>: give it to the app (it subscribes) and put it in
                   broadcast jobs' live_activity.channel_id. --storage 1 (default) keeps the
                   latest broadcast for offline devices; 0 keeps nothing (broadcasts then need
                   delivery.ttl_seconds 0)
          list     prints every channel id of the app, one a line
          read     prints message_storage_policy=<0|1>
          delete   deletes the channel (at most 10,000 per app and environment: delete channels
                   whose event is over)
          --environment  sandbox or production (default production): channels exist per environment
        Credentials as for `pushd worker` (config file or PUSHD_APNS_TEAM_ID/KEY_ID/KEY_FILE/BUNDLE_IDS);
        PUSHD_APNS_CHANNELS_URL (or apns_channels_url) replaces Apple's management hosts.
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        guard let action = arguments.first, ["create", "list", "read", "delete"].contains(action) else {
            throw .usage("channel needs an action: create, list, read or delete")
        }
        let parsed = try ParsedArguments(Array(arguments.dropFirst()), options: ["app", "environment", "storage", "channel-id", "config"])
        let bundle = try parsed.required("app")
        guard let environment = APNsEnvironment(rawValue: parsed["environment"] ?? "production") else {
            throw .usage("--environment must be sandbox or production")
        }
        let loaded: (apns: [WorkerConfiguration.APNsCredentials], caFile: String?, channelsURL: String?)
        do { loaded = try WorkerConfiguration.loadChannelManagement(file: parsed["config"]) } catch { throw .failure(error.description) }
        guard let credentials = loaded.apns.first(where: { $0.bundleIDs.contains(bundle) }) else {
            throw .failure("no APNs key is configured for bundle id \(bundle)")
        }
        var http = HTTP2Client.Configuration(maximumInFlight: 4)
        http.caFile = loaded.caFile
        let configuration = APNsClient.Configuration(
            teamID: credentials.teamID, keyID: credentials.keyID, privateKeyPEM: credentials.privateKeyPEM,
            baseURLOverride: loaded.channelsURL, http: http)
        let client: APNsChannelClient
        do { client = try APNsChannelClient(configuration: configuration, logger: Logger(label: "pushd.channel")) } catch {
            throw .failure(error.description)
        }
        let lines: [String]
        do {
            lines = try await perform(action, parsed, client: client, bundle: bundle, environment: environment)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
        for line in lines { StandardStreams.write(line: line) }
    }

    private static func perform(
        _ action: String, _ parsed: ParsedArguments, client: APNsChannelClient, bundle: String, environment: APNsEnvironment
    ) async throws(CLIError) -> [String] {
        do {
            switch action {
            case "create":
                let storageText = parsed["storage"] ?? "1"
                guard let raw = Int(storageText), let storage = APNsChannelClient.MessageStoragePolicy(rawValue: raw) else {
                    throw CLIError.usage("--storage must be 0 or 1")
                }
                return ["channel_id=" + (try await client.create(bundleID: bundle, environment: environment, storage: storage))]
            case "list":
                return try await client.list(bundleID: bundle, environment: environment)
            case "read":
                let policy = try await client.read(bundleID: bundle, environment: environment, channelID: try parsed.required("channel-id"))
                return ["message_storage_policy=\(policy.rawValue)"]
            default:
                try await client.delete(bundleID: bundle, environment: environment, channelID: try parsed.required("channel-id"))
                return ["deleted"]
            }
        } catch let error as CLIError {
            throw error
        } catch let error as APNsChannelClient.Failure {
            throw .failure(error.description)
        } catch {
            throw .failure("\(error)")
        }
    }
}
