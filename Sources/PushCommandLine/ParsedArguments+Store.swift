import Foundation
import PushStore

extension ParsedArguments {
    /// The database from `--database-url`, else `PUSHD_DATABASE_URL`, else `database_url` of
    /// the configuration file the worker reads (`--config FILE` or `PUSHD_CONFIG`), else a
    /// usage error saying how to give one: every command reads the same configuration.
    /// Shared by the commands that talk to PostgreSQL.
    public func storeConfiguration(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CLIError) -> StoreConfiguration {
        var explicit = self["database-url"]
        if explicit == nil, (environment["PUSHD_DATABASE_URL"] ?? "").isEmpty,
           let file = self["config"] ?? environment["PUSHD_CONFIG"], !file.isEmpty
        {
            explicit = try Self.databaseURL(configFile: file)
        }
        do {
            return try StoreConfiguration.resolve(explicitURL: explicit, environment: environment)
        } catch {
            if case .invalidConfiguration = error, explicit == nil {
                throw .usage(error.description)
            }
            throw .failure(error.description)
        }
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
