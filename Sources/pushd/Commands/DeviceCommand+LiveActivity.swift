import Foundation
import PushCommandLine
import PushModel
import PushRuntime
import PushStore

/// `pushd device push-to-start | activity-token | end-activity`: the Live Activity tokens an
/// app backend reports, for scripts and demos. Backends in other languages call the SQL
/// functions directly (`Schemas/sql/README.md`, "Live Activity tokens").
extension DeviceCommand {
    static let liveActivityHelp = """
        usage: pushd device push-to-start  --app BUNDLE [--environment E] --device-token HEX --token HEX
               pushd device activity-token --app BUNDLE [--environment E] --device-token HEX --activity-id ID --token HEX
               pushd device end-activity   --app BUNDLE --activity-id ID [--device-id N,N,…]

          push-to-start   registers the device's push-to-start token (iOS 17.2+; one per device,
                          a new one replaces it): pushd_register_push_to_start_token
          activity-token  registers the update token of one running activity, under the
                          producer's own activity id: pushd_register_activity_token
          end-activity    deletes the activity's update tokens (of every device of the app, or
                          only of the device ids given, comma-separated): pushd_end_activity
          --device-token  the device's APNs token, as registered with `pushd device register`
          --environment   sandbox or production (default production)
          --database-url  default: $PUSHD_DATABASE_URL
        Prints device_id=<id> replaced=<bool> created=<bool>, or deleted=<n>.
        """

    /// Runs one of the Live Activity actions; false if `action` is none of them.
    static func runLiveActivity(_ action: String, _ arguments: [String]) async throws(CLIError) -> Bool {
        guard ["push-to-start", "activity-token", "end-activity"].contains(action) else { return false }
        let parsed = try ParsedArguments(
            arguments, options: ["app", "environment", "device-token", "activity-id", "token", "device-id", "database-url"])
        let app = try parsed.required("app")
        let environmentText = parsed["environment"] ?? "production"
        guard let environment = PushEnvironment(rawValue: environmentText) else {
            throw .usage("--environment must be sandbox or production")
        }
        var deviceIDs: [Int64]?
        if let list = parsed["device-id"] {
            let ids = list.split(separator: ",").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
            guard !ids.isEmpty, ids.count == list.split(separator: ",").count else {
                throw .usage("--device-id must be device ids, comma-separated")
            }
            deviceIDs = ids
        }
        var configuration = try parsed.storeConfiguration()
        configuration.poolSize = 1
        let pool = ConnectionPool(configuration: configuration, logger: Logger(label: "pushd.device"))
        let registry = DeviceRegistry(pool: pool)
        let line: String
        do {
            switch action {
            case "push-to-start":
                let outcome = try await registry.registerPushToStartToken(
                    appID: app, environment: environment, deviceToken: try parsed.required("device-token"),
                    token: try parsed.required("token"))
                line = "device_id=\(outcome.deviceID) replaced=\(outcome.replaced) created=\(outcome.created)"
            case "activity-token":
                let outcome = try await registry.registerActivityToken(
                    appID: app, environment: environment, deviceToken: try parsed.required("device-token"),
                    activityID: try parsed.required("activity-id"), token: try parsed.required("token"))
                line = "device_id=\(outcome.deviceID) replaced=\(outcome.replaced) created=\(outcome.created)"
            default:
                let deleted = try await registry.endActivity(
                    appID: app, activityID: try parsed.required("activity-id"), deviceIDs: deviceIDs)
                line = "deleted=\(deleted)"
            }
        } catch let error as CLIError {
            await pool.shutdown()
            throw error
        } catch {
            await pool.shutdown()
            throw .failure("\(error)")
        }
        await pool.shutdown()
        StandardStreams.write(line: line)
        return true
    }
}
