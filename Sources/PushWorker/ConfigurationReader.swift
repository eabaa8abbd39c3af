import Foundation
import PushDelivery

/// Reads settings from the JSON file and the environment (which wins), collecting problems
/// instead of stopping at the first.
struct ConfigurationReader {
    let environment: [String: String]
    var file: [String: Any] = [:]
    var problems: [String] = []

    init(environment: [String: String]) {
        self.environment = environment
    }

    mutating func problem(_ text: String) {
        problems.append(text)
    }

    mutating func loadFile(_ path: String) {
        guard let data = FileManager.default.contents(atPath: path) else {
            problem("config file \(path) cannot be read")
            return
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            problem("config file \(path) is not a JSON object")
            return
        }
        file = object
    }

    mutating func string(_ key: String, env: String, required: Bool = false) -> String? {
        if let value = environment[env], !value.isEmpty { return value }
        if let value = file[key] {
            // Several brokers: `amqp_url` may also be an array of URLs, read as the
            // comma-separated list that `AMQPConfiguration(url:)` accepts.
            if key == "amqp_url", let urls = value as? [String], !urls.isEmpty {
                return urls.joined(separator: ",")
            }
            guard let text = value as? String else {
                problem("\(key) must be a string")
                return nil
            }
            return text
        }
        if required { problem("\(key) is required (config file) or set \(env)") }
        return nil
    }

    mutating func int(_ key: String, env: String, range: ClosedRange<Int>) -> Int? {
        var value: Int?
        if let text = environment[env], !text.isEmpty {
            guard let parsed = Int(text) else {
                problem("\(env) must be an integer, got \"\(text)\"")
                return nil
            }
            value = parsed
        } else if let raw = file[key] {
            guard let number = raw as? Int else {
                problem("\(key) must be an integer")
                return nil
            }
            value = number
        }
        if let value, !range.contains(value) {
            problem("\(key) must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
            return nil
        }
        return value
    }

    mutating func bool(_ key: String, env: String) -> Bool? {
        if let text = environment[env]?.lowercased(), !text.isEmpty {
            switch text {
            case "1", "true", "yes": return true
            case "0", "false", "no": return false
            default:
                problem("\(env) must be true or false, got \"\(text)\"")
                return nil
            }
        }
        if let raw = file[key] {
            guard let flag = raw as? Bool else {
                problem("\(key) must be true or false")
                return nil
            }
            return flag
        }
        return nil
    }

    /// `apns: [{team_id, key_id, key_file | key_env, bundle_ids, base_url?, production_url?,
    /// sandbox_url?}]` from the file, plus one entry from `PUSHD_APNS_TEAM_ID`,
    /// `PUSHD_APNS_KEY_ID`, `PUSHD_APNS_KEY_FILE`, `PUSHD_APNS_BUNDLE_IDS` (comma-separated),
    /// `PUSHD_APNS_BASE_URL`, `PUSHD_APNS_PRODUCTION_URL` and `PUSHD_APNS_SANDBOX_URL`.
    mutating func apnsCredentials() -> [WorkerConfiguration.APNsCredentials] {
        var entries: [[String: Any]] = []
        if let list = file["apns"] {
            if let array = list as? [[String: Any]] { entries = array } else { problem("apns must be an array of objects") }
        }
        if let team = environment["PUSHD_APNS_TEAM_ID"], !team.isEmpty {
            entries.append([
                "team_id": team, "key_id": environment["PUSHD_APNS_KEY_ID"] ?? "",
                "key_file": environment["PUSHD_APNS_KEY_FILE"] as Any,
                "bundle_ids": (environment["PUSHD_APNS_BUNDLE_IDS"] ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) },
                "base_url": environment["PUSHD_APNS_BASE_URL"] as Any,
                "production_url": environment["PUSHD_APNS_PRODUCTION_URL"] as Any,
                "sandbox_url": environment["PUSHD_APNS_SANDBOX_URL"] as Any,
            ])
        }
        var credentials: [WorkerConfiguration.APNsCredentials] = []
        for (index, entry) in entries.enumerated() {
            let place = "apns[\(index)]"
            let team = entry["team_id"] as? String ?? ""
            let key = entry["key_id"] as? String ?? ""
            let bundles = entry["bundle_ids"] as? [String] ?? []
            if team.count != 10 { problem("\(place).team_id must be Apple's 10-character team id") }
            if key.count != 10 { problem("\(place).key_id must be Apple's 10-character key id") }
            if bundles.isEmpty { problem("\(place).bundle_ids must list the bundle ids this key pushes to") }
            let pem: String?
            if let path = entry["key_file"] as? String, !path.isEmpty {
                pem = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
                if pem == nil { problem("\(place).key_file \(path) cannot be read") }
            } else if let variable = entry["key_env"] as? String, !variable.isEmpty {
                pem = environment[variable]
                if pem == nil { problem("\(place).key_env names \(variable), which is not set") }
            } else {
                pem = nil
                problem("\(place) needs key_file (path of the .p8) or key_env (variable holding it)")
            }
            if let pem, (try? APNsTokenProvider(teamID: team, keyID: key, privateKeyPEM: pem)) == nil {
                problem("\(place): the key is not a valid APNs .p8 (P-256) private key")
            }
            func url(_ key: String, _ variable: String) -> String? {
                (entry[key] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
            }
            let baseURL = url("base_url", "PUSHD_APNS_BASE_URL")
            let productionURL = url("production_url", "PUSHD_APNS_PRODUCTION_URL")
            let sandboxURL = url("sandbox_url", "PUSHD_APNS_SANDBOX_URL")
            if let pem {
                credentials.append(.init(
                    teamID: team, keyID: key, privateKeyPEM: pem, bundleIDs: bundles, baseURL: baseURL,
                    productionURL: productionURL, sandboxURL: sandboxURL))
            }
        }
        return credentials
    }

    /// `fcm: [{service_account_file, base_url?}]` from the file, plus
    /// `PUSHD_FCM_SERVICE_ACCOUNT_FILES` (comma-separated) and `PUSHD_FCM_BASE_URL`.
    mutating func fcmCredentials() -> [WorkerConfiguration.FCMCredentials] {
        var entries: [[String: Any]] = []
        if let list = file["fcm"] {
            if let array = list as? [[String: Any]] { entries = array } else { problem("fcm must be an array of objects") }
        }
        for path in (environment["PUSHD_FCM_SERVICE_ACCOUNT_FILES"] ?? "").split(separator: ",") {
            entries.append(["service_account_file": String(path).trimmingCharacters(in: .whitespaces)])
        }
        var credentials: [WorkerConfiguration.FCMCredentials] = []
        var projects: Set<String> = []
        for (index, entry) in entries.enumerated() {
            guard let path = entry["service_account_file"] as? String, !path.isEmpty else {
                problem("fcm[\(index)].service_account_file is required")
                continue
            }
            do {
                let account = try FCMServiceAccount.load(path: path)
                if !projects.insert(account.projectID).inserted {
                    problem("fcm project \(account.projectID) is configured twice")
                }
                let baseURL = (entry["base_url"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? environment["PUSHD_FCM_BASE_URL"]
                credentials.append(.init(account: account, baseURL: baseURL))
            } catch {
                problem("fcm[\(index)]: \(error)")
            }
        }
        return credentials
    }
}
