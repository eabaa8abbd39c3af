import Foundation
import PushRuntime

extension AMQPConfiguration {
    /// Parses `amqp://user:password@host:port/vhost` or `amqps://…` (RabbitMQ's URI spec).
    ///
    /// - User, password and vhost are percent-decoded: the default vhost `/` is `%2f`; an
    ///   empty path also means `/`.
    /// - Missing credentials come from `PUSHD_AMQP_USER` / `PUSHD_AMQP_PASSWORD`, so a
    ///   password can stay out of the URL (and out of process listings); failing both,
    ///   RabbitMQ's default `guest`/`guest`.
    /// - Query parameters: `heartbeat` (seconds), `connection_timeout` (milliseconds),
    ///   `cacertfile`, `certfile`, `keyfile` (amqps only). Others are refused so that a typo
    ///   does not silently change nothing.
    /// - Several brokers: URLs separated by commas, as for `init(urls:)`.
    public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(QueueError) {
        try self.init(urls: AMQPURL.split(url), environment: environment)
    }

    /// Several brokers (the nodes of a cluster), tried in this order: one `endpoint` each.
    /// The URLs must agree on everything but host and port (user, password, vhost, scheme,
    /// TLS files, heartbeat, connection timeout); a connection has one set of credentials.
    public init(urls: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws(QueueError) {
        guard let first = urls.first else { throw .invalidURL(url: "", reason: "no URL given") }
        self = try AMQPConfiguration(singleURL: first, environment: environment)
        for url in urls.dropFirst() {
            let other = try AMQPConfiguration(singleURL: url, environment: environment)
            var differences: [String] = []
            if other.user != user { differences.append("user") }
            if other.password != password { differences.append("password") }
            if other.virtualHost != virtualHost { differences.append("vhost") }
            if (other.tls == nil) != (tls == nil) { differences.append("scheme") } else if other.tls != tls { differences.append("TLS files") }
            if other.heartbeat != heartbeat { differences.append("heartbeat") }
            if other.connectTimeout != connectTimeout { differences.append("connection_timeout") }
            guard differences.isEmpty else {
                throw .invalidURL(url: Redact.url(url), reason: "differs from the first URL in \(differences.joined(separator: ", ")); all brokers share one set of credentials and settings")
            }
            endpoints += other.endpoints
        }
        _ = try validated()
    }

    private init(singleURL url: String, environment: [String: String]) throws(QueueError) {
        let shown = Redact.url(url)
        func fail(_ reason: String) -> QueueError { .invalidURL(url: shown, reason: reason) }

        guard let schemeEnd = url.range(of: "://") else { throw fail("missing scheme") }
        let tlsEnabled: Bool
        switch url[..<schemeEnd.lowerBound].lowercased() {
        case "amqp": tlsEnabled = false
        case "amqps": tlsEnabled = true
        default: throw fail("scheme must be amqp or amqps")
        }
        var rest = url[schemeEnd.upperBound...]
        var query = Substring("")
        if let questionMark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: questionMark)...]
            rest = rest[..<questionMark]
        }
        var path: Substring?
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var authority = rest
        var urlUser: String?
        var urlPassword: String?
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                urlUser = try AMQPURL.decode(userInfo[..<colon], what: "user", fail: fail)
                urlPassword = try AMQPURL.decode(userInfo[userInfo.index(after: colon)...], what: "password", fail: fail)
            } else {
                urlUser = try AMQPURL.decode(userInfo, what: "user", fail: fail)
            }
        }
        let (host, port) = try AMQPURL.hostAndPort(authority, fail: fail)

        var virtualHost = "/"
        if let path, !path.isEmpty {
            guard !path.contains("/") else { throw fail("the vhost must be one path segment; write / as %2f") }
            virtualHost = try AMQPURL.decode(path, what: "vhost", fail: fail)
        }

        let user = (urlUser?.isEmpty == false ? urlUser : nil) ?? environment["PUSHD_AMQP_USER"] ?? "guest"
        let password = urlPassword ?? environment["PUSHD_AMQP_PASSWORD"] ?? "guest"
        self.init(host: host, port: port, virtualHost: virtualHost, user: user, password: password,
                  tls: tlsEnabled ? TLSOptions() : nil)
        try applyQuery(query, fail: fail)
        _ = try validated()
    }

    private mutating func applyQuery(_ query: Substring, fail: (String) -> QueueError) throws(QueueError) {
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0])
            let value = try AMQPURL.decode(parts.count > 1 ? parts[1] : "", what: key, fail: fail)
            switch key {
            case "heartbeat":
                guard let seconds = Int(value), seconds >= 0 else { throw fail("heartbeat must be whole seconds ≥ 0") }
                heartbeat = .seconds(seconds)
            case "connection_timeout":
                guard let milliseconds = Int(value), milliseconds > 0 else { throw fail("connection_timeout must be milliseconds > 0") }
                connectTimeout = .milliseconds(milliseconds)
            case "cacertfile", "certfile", "keyfile":
                guard var options = tls else { throw fail("\(key) needs an amqps:// URL") }
                switch key {
                case "cacertfile": options.caCertificateFile = value
                case "certfile": options.clientCertificateFile = value
                default: options.clientKeyFile = value
                }
                tls = options
            default:
                throw fail("unsupported query parameter \"\(key)\" (supported: heartbeat, connection_timeout, cacertfile, certfile, keyfile)")
            }
        }
    }
}

/// Percent-coding and authority parsing for AMQP URLs.
enum AMQPURL {
    /// Characters that need no escaping in a URL's user, password or path segment.
    private static let unreserved = CharacterSet(charactersIn:
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Splits a comma-separated list of URLs. A comma that does not start another
    /// `scheme://` (one inside a password, say) stays part of the URL it is in.
    static func split(_ text: String) -> [String] {
        var urls: [String] = []
        for piece in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = piece.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty && !urls.isEmpty { continue }  // a trailing or doubled comma
            if trimmed.contains("://") || urls.isEmpty {
                urls.append(trimmed)
            } else {
                urls[urls.count - 1] += "," + piece
            }
        }
        return urls
    }

    static func percentEncode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    static func decode(_ text: Substring, what: String, fail: (String) -> QueueError) throws(QueueError) -> String {
        guard let decoded = String(text).removingPercentEncoding else {
            throw fail("malformed percent-encoding in the \(what)")
        }
        return decoded
    }

    static func hostAndPort(_ authority: Substring, fail: (String) -> QueueError) throws(QueueError) -> (String, Int?) {
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw fail("unterminated [IPv6] host") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("unexpected text after [IPv6] host") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw fail("missing host") }
        var port: Int?
        if let portText, !portText.isEmpty {
            guard let number = Int(portText), (1...65_535).contains(number) else { throw fail("port must be 1…65535") }
            port = number
        }
        return (try decode(host, what: "host", fail: fail), port)
    }
}
