import Foundation
import PushStore

extension ParsedArguments {
    /// The database from `--database-url`, else `PUSHD_DATABASE_URL`, else `database_url` of
    /// the configuration file the worker reads (`--config FILE` or `PUSHD_CONFIG`), else a
    /// usage error saying how to give one: every command reads the same configuration.
    /// Shared by the commands that talk to PostgreSQL, which refuse an unverified connection
    /// to a remote server as the worker does (`insecureTransportProblem`), unless
    /// `allow_insecure_transport` says otherwise.
    public func storeConfiguration(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CLIError) -> StoreConfiguration {
        var explicit = self["database-url"]
        let file = (self["config"] ?? environment["PUSHD_CONFIG"]).flatMap { $0.isEmpty ? nil : $0 }
        if explicit == nil, (environment["PUSHD_DATABASE_URL"] ?? "").isEmpty, let file {
            explicit = try Self.databaseURL(configFile: file)
        }
        let configuration: StoreConfiguration
        do {
            configuration = try StoreConfiguration.resolve(explicitURL: explicit, environment: environment)
        } catch {
            if case .invalidConfiguration = error, explicit == nil {
                throw .usage(error.description)
            }
            throw .failure(error.description)
        }
        if let problem = configuration.insecureTransportProblem(environment: environment),
           try !Self.allowsInsecureTransport(environment: environment, configFile: file)
        {
            throw .usage(problem)
        }
        return configuration
    }

    /// `PUSHD_ALLOW_INSECURE_TRANSPORT`, else `allow_insecure_transport` of the configuration
    /// file, as the worker reads them.
    static func allowsInsecureTransport(environment: [String: String], configFile: String?) throws(CLIError) -> Bool {
        if let text = environment["PUSHD_ALLOW_INSECURE_TRANSPORT"]?.lowercased(), !text.isEmpty {
            switch text {
            case "1", "true", "yes": return true
            case "0", "false", "no": return false
            default: throw .usage("PUSHD_ALLOW_INSECURE_TRANSPORT must be true or false, got \"\(text)\"")
            }
        }
        guard let configFile, let data = FileManager.default.contents(atPath: configFile),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let flag = object["allow_insecure_transport"]
        else { return false }
        guard let allowed = flag as? Bool else { throw .usage("allow_insecure_transport in \(configFile) must be true or false") }
        return allowed
    }

    /// `database_url` of a pushd configuration file (`Deploy/config/pushd.example.json`).
    static func databaseURL(configFile path: String) throws(CLIError) -> String? {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw .usage("config file \(path) cannot be read as a JSON object") }
        guard let url = object["database_url"] else { return nil }
        guard let text = url as? String else { throw .usage("database_url in \(path) must be a string") }
        return text
    }
}
