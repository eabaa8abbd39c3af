/// Every failure of the store, typed, so that a caller can decide what to do without parsing
/// messages: `isRetryable` says whether the same call may succeed if simply made again later.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database URL or a setting is unusable. Fix the configuration; retrying cannot help.
    case invalidConfiguration(String)
    /// No connection could be opened (server down, refused, authentication, TLS, timeout).
    case connectionFailed(String)
    /// An open connection broke (server restart, network, admin shutdown). The connection has
    /// been discarded; the next call gets a fresh one.
    case connectionLost(ConnectionLoss)
    /// No connection became free, or could be opened, within the pool's acquire timeout.
    case poolTimeout(waited: Duration, lastConnectError: String?)
    /// The pool has been shut down.
    case poolClosed
    /// The server refused the statement; SQLSTATE and fields are preserved.
    case server(ServerError)
    /// A value could not be sent as a parameter (for example text containing NUL).
    case invalidParameter(index: Int, reason: String)
    /// A result column could not be read as the Swift type asked for.
    case decoding(DecodingFailure)
    /// The result had another shape than the caller required (row count, columns).
    case unexpectedResult(String)
    /// The calling task was cancelled; a statement in flight was cancelled on the server.
    case cancelled

    /// Whether repeating the operation later (after a backoff) may succeed: connection
    /// problems, timeouts, serialization failures and deadlocks, server overload.
    public var isRetryable: Bool {
        switch self {
        case .connectionFailed, .connectionLost, .poolTimeout: return true
        case .server(let error): return error.isRetryable
        case .invalidConfiguration, .poolClosed, .invalidParameter, .decoding, .unexpectedResult, .cancelled:
            return false
        }
    }

    /// The SQLSTATE of a server error, if this is one.
    public var sqlState: String? {
        switch self {
        case .server(let error): return error.sqlState
        case .connectionLost(let loss): return loss.sqlState
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .invalidConfiguration(let why): return "invalid database configuration: \(why)"
        case .connectionFailed(let why): return "cannot connect to PostgreSQL: \(why)"
        case .connectionLost(let loss): return loss.description
        case .poolTimeout(let waited, let last):
            let cause = last.map { "; last connection attempt: \($0)" } ?? ""
            return "no PostgreSQL connection became available within \(waited)\(cause)"
        case .poolClosed: return "the PostgreSQL connection pool is shut down"
        case .server(let error): return error.description
        case .invalidParameter(let index, let reason): return "parameter $\(index) cannot be sent: \(reason)"
        case .decoding(let failure): return failure.description
        case .unexpectedResult(let why): return "unexpected result: \(why)"
        case .cancelled: return "cancelled"
        }
    }
}

/// How an open connection was lost.
public struct ConnectionLoss: Sendable, Equatable, CustomStringConvertible {
    /// libpq's or the server's message (for example "terminating connection due to
    /// administrator command").
    public let message: String
    /// Set when the server said why (class 08, `57P01` admin shutdown, `57P02`, `57P03`).
    public let sqlState: String?
    /// False when the loss was detected before the statement was sent: repeating it is then
    /// safe even if it is not idempotent. True means it may or may not have run.
    public let mayHaveExecuted: Bool

    public init(message: String, sqlState: String?, mayHaveExecuted: Bool) {
        self.message = message
        self.sqlState = sqlState
        self.mayHaveExecuted = mayHaveExecuted
    }

    public var description: String {
        let state = sqlState.map { " (SQLSTATE \($0))" } ?? ""
        let outcome = mayHaveExecuted ? "; the statement may or may not have run" : "; the statement was not sent"
        return "PostgreSQL connection lost\(state): \(message)\(outcome)"
    }
}

/// Why a column could not be decoded.
public struct DecodingFailure: Sendable, Equatable, CustomStringConvertible {
    public let column: Int
    public let columnName: String
    public let postgresType: PostgresType
    public let swiftType: String
    public let reason: String

    public var description: String {
        "cannot decode column \(column) \"\(columnName)\" (\(postgresType)) as \(swiftType): \(reason)"
    }
}
