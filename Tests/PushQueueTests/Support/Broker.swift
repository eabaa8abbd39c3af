import Foundation
import PushQueue
import PushRuntime
import PushTestSupport

/// The shared RabbitMQ the suites run against (`PUSHD_AMQP_URL`), and fresh, isolated
/// topologies on it.
enum Broker {
    struct MissingURL: Error, CustomStringConvertible {
        var variable = "PUSHD_AMQP_URL"

        var description: String {
            """
            \(variable) is not set. These tests need a real RabbitMQ: run `bash Deploy/test.sh`, \
            or `bash Deploy/local/services.sh start && eval "$(bash Deploy/local/services.sh env)"` \
            before `swift test`.
            """
        }
    }

    static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["PUSHD_AMQP_URL"], !url.isEmpty else { throw MissingURL() }
        return url
    }

    /// Quick reconnects, so that fault tests spend their time on the fault.
    static func configuration(_ name: String, url: String? = nil) throws -> AMQPConfiguration {
        var configuration = try AMQPConfiguration(url: url ?? Self.url())
        configuration.connectionName = "pushd-test-\(name)"
        configuration.reconnectBackoff = Backoff(base: .milliseconds(50), cap: .milliseconds(500))
        configuration.connectTimeout = .seconds(5)
        return configuration
    }

    static func logger(_ name: String) -> Logger {
        Logger(label: "test.\(name)")
    }

    /// A connected connection; the topology, if given, is declared on every connect.
    static func connect(
        _ name: String, configuration: AMQPConfiguration? = nil, topology: Topology? = nil
    ) async throws -> AMQPConnection {
        let connection = try AMQPConnection(configuration: configuration ?? Self.configuration(name), topology: topology,
                                            logger: logger(name))
        await connection.start()
        do {
            try await connection.waitUntilConnected(timeout: .seconds(20))
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    /// A topology no other test uses: unique prefix, a 1-second retry tier.
    static func scratchTopology(tiers: [Topology.RetryTier] = [.init(name: "1s", delay: .seconds(1))]) -> Topology {
        Topology(prefix: "t-\(UUID().uuidString.lowercased().prefix(13))", retryTiers: tiers)
    }

    /// Runs `body` with a connection that has declared a scratch topology, then deletes the
    /// topology and closes the connection, whether `body` succeeded or not.
    static func withScratchTopology(
        _ name: String, tiers: [Topology.RetryTier] = [.init(name: "1s", delay: .seconds(1))],
        _ body: (Topology, AMQPConnection) async throws -> Void
    ) async throws {
        let topology = scratchTopology(tiers: tiers)
        let connection = try await connect(name, topology: topology)
        do {
            try await body(topology, connection)
        } catch {
            try? await cleanUp(topology, connection)
            throw error
        }
        try await cleanUp(topology, connection)
    }

    private static func cleanUp(_ topology: Topology, _ connection: AMQPConnection) async throws {
        if connection.status.state != .connected {
            try await connection.waitUntilConnected(timeout: .seconds(20))
        }
        try await connection.delete(topology)
        await connection.close()
    }

    /// `rabbitmqctl` against the test node, for policies scoped to a test's own queues.
    @discardableResult
    static func rabbitmqctl(_ arguments: [String]) throws -> ChildProcess.Result {
        try TestServers.rabbitmqctl(arguments)
    }

    static func message(_ text: String, id: String? = nil, headers: [String: HeaderValue] = [:]) -> OutgoingMessage {
        OutgoingMessage(body: Array(text.utf8), contentType: "application/json", messageID: id, headers: headers)
    }
}
