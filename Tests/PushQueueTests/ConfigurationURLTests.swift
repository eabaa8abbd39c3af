import PushQueue
import Testing

@Suite("AMQP URL and credentials")
struct ConfigurationURLTests {
    @Test("user, password and vhost are percent-decoded; %2f is the default vhost")
    func percentDecoding() throws {
        let configuration = try AMQPConfiguration(url: "amqp://us%40er:p%3Ass%2Fw%25rd@rabbit.example:5673/%2f", environment: [:])
        #expect(configuration.user == "us@er")
        #expect(configuration.password == "p:ss/w%rd")
        #expect(configuration.host == "rabbit.example")
        #expect(configuration.port == 5673)
        #expect(configuration.virtualHost == "/")
        #expect(configuration.tls == nil)
    }

    @Test("defaults: port 5672 (5671 for amqps), vhost /, TLS for amqps")
    func defaults() throws {
        let plain = try AMQPConfiguration(url: "amqp://u:p@localhost", environment: [:])
        #expect(plain.port == 5672)
        #expect(plain.virtualHost == "/")
        let empty = try AMQPConfiguration(url: "amqp://u:p@localhost/", environment: [:])
        #expect(empty.virtualHost == "/")
        let secure = try AMQPConfiguration(url: "AMQPS://u:p@broker/prod", environment: [:])
        #expect(secure.port == 5671)
        #expect(secure.tls == TLSOptions())
        #expect(secure.virtualHost == "prod")
    }

    @Test("credentials missing from the URL come from PUSHD_AMQP_USER / PUSHD_AMQP_PASSWORD, else guest")
    func environmentCredentials() throws {
        let environment = ["PUSHD_AMQP_USER": "worker", "PUSHD_AMQP_PASSWORD": "s3cret"]
        let fromEnvironment = try AMQPConfiguration(url: "amqp://broker:5672/%2f", environment: environment)
        #expect(fromEnvironment.user == "worker")
        #expect(fromEnvironment.password == "s3cret")
        let userInURL = try AMQPConfiguration(url: "amqp://pushd-worker@broker", environment: environment)
        #expect(userInURL.user == "pushd-worker")
        #expect(userInURL.password == "s3cret")
        let urlWins = try AMQPConfiguration(url: "amqp://a:b@broker", environment: environment)
        #expect(urlWins.user == "a" && urlWins.password == "b")
        let neither = try AMQPConfiguration(url: "amqp://broker", environment: [:])
        #expect(neither.user == "guest" && neither.password == "guest")
    }

    @Test("IPv6 hosts and query parameters")
    func ipv6AndQuery() throws {
        let configuration = try AMQPConfiguration(
            url: "amqps://u:p@[::1]:5999/v?heartbeat=10&connection_timeout=2500&cacertfile=%2Fetc%2Fca.pem", environment: [:])
        #expect(configuration.host == "::1")
        #expect(configuration.port == 5999)
        #expect(configuration.heartbeat == .seconds(10))
        #expect(configuration.connectTimeout == .milliseconds(2500))
        #expect(configuration.tls?.caCertificateFile == "/etc/ca.pem")
        #expect(configuration.redactedURL == "amqps://u:***@[::1]:5999/v")
    }

    @Test("the password never appears in descriptions or in URL errors")
    func redaction() throws {
        let configuration = try AMQPConfiguration(url: "amqp://pushd:hunter2@127.0.0.1:55672/%2f", environment: [:])
        #expect(configuration.redactedURL == "amqp://pushd:***@127.0.0.1:55672/%2F")
        #expect(!"\(configuration)".contains("hunter2"))
        do {
            _ = try AMQPConfiguration(url: "amqp://pushd:hunter2@host:99999/", environment: [:])
            Issue.record("a port out of range was accepted")
        } catch {
            #expect(!error.description.contains("hunter2"))
            #expect(error.description.contains("port"))
        }
    }

    @Test("malformed URLs are refused with the reason", arguments: [
        ("http://host", "scheme"),
        ("amqp//host", "scheme"),
        ("amqp://:5672", "host"),
        ("amqp://host:abc", "port"),
        ("amqp://host/a/b", "path segment"),
        ("amqp://host/%zz", "percent"),
        ("amqp://host?frame_max=1", "frame_max"),
        ("amqp://host?cacertfile=/x", "amqps"),
        ("amqp://[::1/", "IPv6"),
    ])
    func malformed(url: String, reason: String) {
        #expect {
            _ = try AMQPConfiguration(url: url, environment: [:])
        } throws: { error in
            guard let error = error as? QueueError, case .invalidURL(_, let why) = error else { return false }
            return why.contains(reason)
        }
    }

    @Test("a client certificate without its key, or a key without its certificate, is refused at load")
    func clientCertificatePair() throws {
        for url in ["amqps://h/%2f?certfile=%2Fetc%2Fclient.pem", "amqps://h/%2f?keyfile=%2Fetc%2Fclient.key"] {
            #expect {
                _ = try AMQPConfiguration(url: url, environment: [:])
            } throws: { error in
                guard let error = error as? QueueError, case .invalidConfiguration(let why) = error else { return false }
                return why.contains("certfile and keyfile go together")
            }
        }
        let both = try AMQPConfiguration(url: "amqps://h/%2f?certfile=%2Fc.pem&keyfile=%2Fc.key", environment: [:])
        #expect(both.tls?.clientCertificateFile == "/c.pem" && both.tls?.clientKeyFile == "/c.key")
    }

    @Test("several brokers: comma-separated URLs (or init(urls:)) become endpoints in order, with one set of credentials")
    func severalBrokers() throws {
        let list = "amqp://u:p%2Cw@127.0.0.1:5672/%2f, amqp://u:p%2Cw@[::1]:5673/%2f,amqp://u:p%2Cw@rabbit-3/%2f"
        let configuration = try AMQPConfiguration(url: list, environment: [:])
        #expect(configuration.endpoints == [AMQPEndpoint(host: "127.0.0.1", port: 5672), AMQPEndpoint(host: "::1", port: 5673),
                                            AMQPEndpoint(host: "rabbit-3", port: 5672)])
        #expect(configuration.host == "127.0.0.1" && configuration.port == 5672)
        #expect(configuration.password == "p,w")
        #expect(configuration.redactedURL == "amqp://u:***@127.0.0.1:5672/%2F,amqp://u:***@[::1]:5673/%2F,amqp://u:***@rabbit-3:5672/%2F")
        let fromArray = try AMQPConfiguration(urls: ["amqps://u:p@a:5671/v", "amqps://u:p@b/v"], environment: [:])
        #expect(fromArray.endpoints.map(\.description) == ["a:5671", "b:5671"])
        #expect(fromArray.tls != nil)
        // A comma inside a password (unencoded) does not start another URL.
        let raw = try AMQPConfiguration(url: "amqp://u:a,b@host:5672/%2f", environment: [:])
        #expect(raw.password == "a,b" && raw.endpoints.count == 1)
        // Setting host or port changes the first endpoint only.
        var changed = configuration
        changed.port = 1
        #expect(changed.endpoints.map(\.port) == [1, 5673, 5672])
    }

    @Test("brokers that disagree on credentials, vhost or scheme are refused, naming what differs but no password", arguments: [
        ("amqp://u:secret@a/%2f,amqp://v:secret@b/%2f", "user"),
        ("amqp://u:secret@a/%2f,amqp://u:other-secret@b/%2f", "password"),
        ("amqp://u:secret@a/%2f,amqp://u:secret@b/prod", "vhost"),
        ("amqp://u:secret@a/%2f,amqps://u:secret@b/%2f", "scheme"),
        ("amqp://u:secret@a/%2f?heartbeat=5,amqp://u:secret@b/%2f", "heartbeat"),
    ])
    func disagreeingBrokers(list: String, difference: String) {
        #expect {
            _ = try AMQPConfiguration(url: list, environment: [:])
        } throws: { error in
            guard let error = error as? QueueError, case .invalidURL(let url, let why) = error else { return false }
            return why.contains(difference) && !url.contains("secret") && !error.description.contains("secret")
        }
    }
}
