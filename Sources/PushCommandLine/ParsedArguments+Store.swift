import PushStore

extension ParsedArguments {
    /// The database from `--database-url`, else `PUSHD_DATABASE_URL`, else a usage error
    /// saying how to give one. Shared by the commands that talk to PostgreSQL.
    public func storeConfiguration() throws(CLIError) -> StoreConfiguration {
        do {
            return try StoreConfiguration.resolve(explicitURL: self["database-url"])
        } catch {
            if case .invalidConfiguration = error, self["database-url"] == nil {
                throw .usage(error.description)
            }
            throw .failure(error.description)
        }
    }
}
