import PushRuntime

/// Where and how to connect to RabbitMQ, and how patiently.
///
/// Build it from a URL (`AMQPConfiguration(url:)`) so that operators configure one string;
/// the password never appears in logs or descriptions (`redactedURL`). Several brokers
/// (the nodes of a cluster) are several URLs, comma-separated or as `init(urls:)`: they
/// share credentials, vhost and TLS settings and differ only in `endpoints`.
public struct AMQPConfiguration: Sendable, CustomStringConvertible {
    /// Where to connect, in order of preference: the first attempt goes to the first, and
    /// every failed attempt or lost connection moves on to the next (round robin).
    public var endpoints: [AMQPEndpoint]
    public var virtualHost: String
    public var user: String
    /// Sent to the broker only; never logged.
    public var password: String
    /// Present for `amqps://`: TLS with peer and hostname verification, always on.
    public var tls: TLSOptions?
    /// Negotiated with the broker (the smaller wins). rabbitmq-c only sends and checks
    /// heartbeats inside its calls, which the connection makes at least every
    /// `heartbeat / 4` (and at least once a second), so a silent broker is detected after two
    /// missed heartbeats.
    public var heartbeat: Duration = .seconds(30)
    /// For the TCP connect and the TLS handshake, and for the AMQP login handshake.
    public var connectTimeout: Duration = .seconds(10)
    /// For synchronous AMQP methods (declare, bind, qos, consume, cancel). A timed-out call
    /// closes the connection, which then reconnects.
    public var rpcTimeout: Duration = .seconds(30)
    /// How long `publish` waits for the broker's confirm before failing with
    /// `QueueError.confirmTimedOut` (the broker may still take the message).
    public var confirmTimeout: Duration = .seconds(60)
    /// Delays between reconnection attempts.
    public var reconnectBackoff = Backoff(base: .milliseconds(100), cap: .seconds(10))
    /// How long `close()` waits for outstanding publisher confirms before closing anyway.
    public var closeGracePeriod: Duration = .seconds(5)
    /// Shown in the management UI and `rabbitmqctl list_connections client_properties`.
    public var connectionName = "pushd"
    /// The largest frame the client accepts; bigger bodies are split into several frames.
    public var frameMax: Int = 131_072

    public init(host: String, port: Int? = nil, virtualHost: String = "/", user: String, password: String, tls: TLSOptions? = nil) {
        self.endpoints = [AMQPEndpoint(host: host, port: port ?? (tls == nil ? 5672 : 5671))]
        self.virtualHost = virtualHost
        self.user = user
        self.password = password
        self.tls = tls
    }

    /// The first endpoint's host; setting it replaces that endpoint's host.
    public var host: String {
        get { endpoints.first?.host ?? "" }
        set {
            if endpoints.isEmpty {
                endpoints = [AMQPEndpoint(host: newValue, port: tls == nil ? 5672 : 5671)]
            } else {
                endpoints[0].host = newValue
            }
        }
    }

    /// The first endpoint's port; setting it replaces that endpoint's port.
    public var port: Int {
        get { endpoints.first?.port ?? 0 }
        set {
            if endpoints.isEmpty {
                endpoints = [AMQPEndpoint(host: "", port: newValue)]
            } else {
                endpoints[0].port = newValue
            }
        }
    }

    /// The URLs this configuration connects to, comma-separated, each with the password
    /// replaced by `***`.
    public var redactedURL: String {
        endpoints.map(redactedURL(for:)).joined(separator: ",")
    }

    /// The URL of one endpoint, with the password replaced by `***`.
    public func redactedURL(for endpoint: AMQPEndpoint) -> String {
        let scheme = tls == nil ? "amqp" : "amqps"
        return "\(scheme)://\(AMQPURL.percentEncode(user)):***@\(endpoint)/\(AMQPURL.percentEncode(virtualHost))"
    }

    public var description: String { redactedURL }

    /// Checks the values that would otherwise fail obscurely inside rabbitmq-c.
    func validated() throws(QueueError) -> AMQPConfiguration {
        guard !endpoints.isEmpty else { throw .invalidConfiguration("no broker endpoint") }
        for endpoint in endpoints {
            guard !endpoint.host.isEmpty else { throw .invalidConfiguration("host is empty") }
            guard (1...65_535).contains(endpoint.port) else {
                throw .invalidConfiguration("port \(endpoint.port) is not in 1...65535")
            }
            guard !endpoint.host.utf8.contains(0) else { throw .invalidConfiguration("host must not contain NUL") }
        }
        guard heartbeat >= .zero, heartbeat <= .seconds(65_535) else {
            throw .invalidConfiguration("heartbeat must be 0 (off) to 65535 seconds")
        }
        guard connectTimeout > .zero, rpcTimeout > .zero, confirmTimeout > .zero else {
            throw .invalidConfiguration("timeouts must be positive")
        }
        guard frameMax >= 4096 else { throw .invalidConfiguration("frameMax must be at least 4096 (AMQP's minimum)") }
        // One without the other would be dropped at connect, and a broker that asks for a
        // client certificate would refuse the handshake with no word of why.
        if let tls, (tls.clientCertificateFile == nil) != (tls.clientKeyFile == nil) {
            throw .invalidConfiguration("certfile and keyfile go together: give both or neither")
        }
        guard !user.utf8.contains(0), !password.utf8.contains(0), !virtualHost.utf8.contains(0) else {
            throw .invalidConfiguration("user, password and virtual host must not contain NUL")
        }
        return self
    }
}

/// TLS for `amqps://`. Verification of the broker's certificate chain and of its name against
/// `host` is always on: a deployment that needs it off has a certificate problem to fix.
public struct TLSOptions: Sendable, Equatable {
    /// PEM file of the CA certificates to trust. `nil` uses the system's store as OpenSSL
    /// finds it (`SSL_CERT_FILE` and `SSL_CERT_DIR`, else its defaults: on Debian
    /// `/etc/ssl/certs/ca-certificates.crt` and `/etc/ssl/certs`), the same store the APNs
    /// and FCM clients use.
    public var caCertificateFile: String?
    /// Client certificate chain and key (PEM) for brokers that require mutual TLS.
    public var clientCertificateFile: String?
    public var clientKeyFile: String?

    public init(caCertificateFile: String? = nil, clientCertificateFile: String? = nil, clientKeyFile: String? = nil) {
        self.caCertificateFile = caCertificateFile
        self.clientCertificateFile = clientCertificateFile
        self.clientKeyFile = clientKeyFile
    }
}
