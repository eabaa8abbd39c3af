/// One HTTP request as the delivery clients send it.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
        /// APNs channel management deletes channels.
        case delete = "DELETE"
    }

    public var method: Method
    public var url: String
    /// Header names and values; names are sent as given (HTTP/2 lower-cases them).
    public var headers: [(name: String, value: String)]
    /// Headers shared with other requests, encoded once; sent along with `headers`.
    public var sharedHeaders: HeaderBlock?
    public var body: [UInt8]
    /// The whole exchange must finish within this time, connection set-up included.
    public var timeout: Duration
    /// Header names (lower case, `:path` included) whose values differ on every request,
    /// such as APNs's device path and `apns-id`. HTTP/2 sends them without adding them to
    /// the HPACK table (RFC 7541 §7.1.3), where each would push out a value that repeats —
    /// the provider token first, which then travels in full again.
    public var uniqueHeaderNames: [String]
    /// The response headers (lower case) the caller reads; nil keeps every one. Naming them
    /// spares the nghttp2 engine two Strings and a dictionary slot for each of the others on
    /// every response (Google's carry a dozen: `alt-svc`, `vary`, `server`, …). The libcurl
    /// engine keeps every header regardless.
    public var responseHeaderNames: [String]?

    public init(
        method: Method = .post, url: String, sharedHeaders: HeaderBlock? = nil, headers: [(name: String, value: String)] = [],
        body: [UInt8] = [], timeout: Duration = .seconds(30), uniqueHeaderNames: [String] = [], responseHeaderNames: [String]? = nil
    ) {
        self.method = method
        self.url = url
        self.sharedHeaders = sharedHeaders
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.uniqueHeaderNames = uniqueHeaderNames
        self.responseHeaderNames = responseHeaderNames
    }
}

public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    /// Header names lower-cased; a repeated header keeps its last value.
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// 2 for HTTP/2, 1 for HTTP/1.x.
    public var httpVersion: Int

    public init(status: Int, headers: HTTPHeaders, body: [UInt8], httpVersion: Int) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    public init(status: Int, headers: [String: String], body: [UInt8], httpVersion: Int) {
        self.init(status: status, headers: HTTPHeaders(headers), body: body, httpVersion: httpVersion)
    }
}

/// Transport failures: the request never produced an HTTP response.
public enum HTTPClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The request did not complete within its timeout.
    case timedOut
    /// Connecting, the TLS handshake, or the connection itself failed.
    case connectionFailed(String)
    /// The peer's certificate did not verify: configuration, not a transient error.
    case tlsVerificationFailed(String)
    /// The client is shutting down and takes no new requests.
    case shutDown
    case cancelled
    /// Any other libcurl failure, with its code and message.
    case transport(code: Int, message: String)

    /// Whether sending the same request again later may succeed.
    public var isRetryable: Bool {
        switch self {
        case .timedOut, .connectionFailed, .transport: true
        case .tlsVerificationFailed, .shutDown, .cancelled: false
        }
    }

    public var description: String {
        switch self {
        case .timedOut: "request timed out"
        case .connectionFailed(let why): "connection failed: \(why)"
        case .tlsVerificationFailed(let why): "TLS verification failed: \(why)"
        case .shutDown: "HTTP client is shut down"
        case .cancelled: "request cancelled"
        case .transport(let code, let message): "transport error \(code): \(message)"
        }
    }
}
