import CPostgreSQL
import Foundation
import PushRuntime

/// Where the database is and how the pool talks to it.
///
/// The URL is anything libpq accepts — `postgresql://user:password@host:port/db?sslmode=…` or
/// `host=… dbname=…` — and libpq applies every parameter in it, including TLS: `sslmode`
/// defaults to `prefer` (encrypt if the server offers it, unauthenticated); production should
/// use `sslmode=verify-full&sslrootcert=/path/ca.pem`, which checks the certificate chain and
/// the host name. Several hosts (`host1,host2`) with `target_session_attrs=read-write` give
/// failover to the current primary. A password can also come from `PGPASSWORD` or
/// `~/.pgpass`, as for `psql`.
///
/// The pool adds only what the URL leaves unset: a connect timeout, TCP keepalives (so a dead
/// peer is noticed), the application name, a `statement_timeout`, and `client_encoding=UTF8`
/// (always: values are exchanged as UTF-8).
public struct StoreConfiguration: Sendable {
    /// libpq keyword → value, as given in the URL.
    public private(set) var parameters: [String: String]
    /// Connections the pool opens at most. Each has its own thread.
    public var poolSize: Int = 4
    /// How long a caller waits for a busy connection before the pool opens another for it
    /// (one at a time, up to `poolSize`); `.zero` opens one for every queued caller at once.
    /// The first connection is always opened at once. See `PoolStateMachine` for why; 100 ms
    /// because a worker's first 32 jobs, prefetched at once, queue their look-ups on the first
    /// connection for 50–100 ms on a loaded two-core host (10 ms still opened all four).
    public var poolGrowthDelay: Duration = .milliseconds(100)
    /// Server-side limit for each statement (`statement_timeout`); nil for none.
    public var statementTimeout: Duration? = .seconds(30)
    /// Limit for opening one connection (libpq `connect_timeout`, whole seconds, at least 2).
    public var connectTimeout: Duration = .seconds(10)
    /// How long a call waits for a connection (a free one, or a new one being opened while
    /// the server is unreachable) before failing with `StoreError.poolTimeout`.
    public var acquireTimeout: Duration = .seconds(10)
    /// Delay between attempts to open a connection while the server is unreachable.
    public var reconnectBackoff = Backoff(base: .milliseconds(50), cap: .seconds(2))
    /// Shown in `pg_stat_activity` unless the URL sets `application_name`.
    public var applicationName = "pushd"
    /// Whether statements marked `SQLQuery.prepared` are prepared once per session. Off for a
    /// pooler that hands one client's statements to other server sessions without carrying
    /// prepared statements along (PgBouncer in transaction mode before 1.21, or with
    /// `max_prepared_statements = 0`).
    public var preparesStatements = true

    /// Parses `url` with libpq's own parser, so everything libpq accepts is accepted and a
    /// malformed URL is refused before any connection attempt.
    public init(url: String) throws(StoreError) {
        guard !url.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .invalidConfiguration("the database URL is empty")
        }
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &errorMessage) else {
            let why = errorMessage.map { String(cString: $0) } ?? "libpq could not parse it"
            if let errorMessage { PQfreemem(errorMessage) }
            // libpq quotes the offending piece, which may be part of a password.
            throw .invalidConfiguration("malformed database URL: \(Self.unquoted(why).trimmingTrailingNewlines())")
        }
        defer { PQconninfoFree(options) }
        var parameters: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                parameters[String(cString: keyword)] = String(cString: value)
            }
            option += 1
        }
        self.parameters = parameters
    }

    /// `explicitURL` (a `--database-url` option) if given, else `PUSHD_DATABASE_URL`.
    public static func resolve(
        explicitURL: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(StoreError) -> StoreConfiguration {
        if let explicitURL { return try StoreConfiguration(url: explicitURL) }
        if let fromEnvironment = environment["PUSHD_DATABASE_URL"], !fromEnvironment.isEmpty {
            return try StoreConfiguration(url: fromEnvironment)
        }
        throw .invalidConfiguration(
            "no database given: pass --database-url postgresql://user:password@host:port/db or set PUSHD_DATABASE_URL")
    }

    /// The database name the URL selects (libpq defaults it to the user name when unset).
    public var databaseName: String? { parameters["dbname"] }

    /// The same server and credentials, another database: scratch databases for tests and
    /// benchmarks.
    public func withDatabase(_ name: String) -> StoreConfiguration {
        var copy = self
        copy.parameters["dbname"] = name
        return copy
    }

    /// Where the pool connects, safe for logs: no password, ever.
    public var redactedDescription: String {
        let user = parameters["user"].map { "\($0)@" } ?? ""
        let host = parameters["host"] ?? parameters["hostaddr"] ?? "(default host)"
        let port = parameters["port"].map { ":\($0)" } ?? ""
        let database = parameters["dbname"].map { "/\($0)" } ?? ""
        let tls = parameters["sslmode"].map { "?sslmode=\($0)" } ?? ""
        return "postgresql://\(user)\(host)\(port)\(database)\(tls)"
    }

    /// Removes `"…"`-quoted pieces from a libpq message.
    private static func unquoted(_ message: String) -> String {
        var result = "", inQuotes = false
        for character in message {
            if character == "\"" {
                if !inQuotes { result += "\"…\"" }
                inQuotes.toggle()
            } else if !inQuotes {
                result.append(character)
            }
        }
        return result
    }
}

extension StoreConfiguration {
    /// The keyword/value pairs given to `PQconnectdbParams`: the URL's, plus defaults for what
    /// it leaves unset.
    var connectionKeywords: [(String, String)] {
        var values = parameters
        func setDefault(_ key: String, _ value: String) {
            if values[key] == nil { values[key] = value }
        }
        setDefault("connect_timeout", String(max(2, connectTimeout.wholeSeconds)))
        setDefault("keepalives", "1")
        setDefault("keepalives_idle", "10")
        setDefault("keepalives_interval", "5")
        setDefault("keepalives_count", "3")
        values["fallback_application_name"] = applicationName
        values["client_encoding"] = "UTF8"
        if let statementTimeout, !(values["options"] ?? "").contains("statement_timeout") {
            let setting = "-c statement_timeout=\(statementTimeout.wholeMilliseconds)"
            values["options"] = values["options"].map { "\($0) \(setting)" } ?? setting
        }
        return values.sorted { $0.key < $1.key }
    }

    /// Keywords and values for running a libpq tool (`pgbench`, `psql`) against the same
    /// server, the password apart so it can go in `PGPASSWORD` instead of the command line.
    public func toolConnection() -> (connectionString: String, password: String?) {
        let pairs = parameters.filter { $0.key != "password" }.sorted { $0.key < $1.key }
        let text = pairs.map { key, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            return "\(key)='\(escaped)'"
        }.joined(separator: " ")
        return (text, parameters["password"])
    }
}

extension Duration {
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    var wholeSeconds: Int {
        Int(components.seconds) + (components.attoseconds > 0 ? 1 : 0)
    }
}
