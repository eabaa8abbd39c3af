import Foundation
import PushQueue
import PushTestSupport
import Testing

/// Faults that would disturb the shared broker, each on a RabbitMQ node of its own. One at a
/// time: each node is a whole Erlang VM.
@Suite("Broker faults and TLS on private RabbitMQ nodes", .serialized)
struct PrivateNodeTests {
    @Test("the broker restarting (stop_app/start_app) under load loses no confirmed message")
    func brokerRestart() async throws {
        let node = try await onOwnThread { try PrivateRabbitMQNode.start(label: "restart") }
        defer { node.stop() }
        let topology = Broker.scratchTopology(tiers: [])
        let publisher = try await Broker.connect("restart-publisher", configuration: Broker.configuration("restart-publisher", url: node.amqpURL),
                                                 topology: topology)
        let consumerConnection = try await Broker.connect("restart-consumer", configuration: Broker.configuration("restart-consumer", url: node.amqpURL),
                                                          topology: topology)
        let consumer = try await consumerConnection.consume(queue: topology.jobsQueue, prefetch: 50)
        let collector = await MessageCollector(consumer, autoAck: true)

        let total = 3000
        let confirmed = NSLockedValue<Set<String>>([])
        let failedAttempts = NSLockedValue(0)
        let publishing = Task {
            for index in 0..<total {
                let id = "m-\(index)"
                while true {
                    do throws(QueueError) {
                        try await publisher.publish(Broker.message("{\"n\":\(index)}", id: id), exchange: topology.jobsExchange,
                                                    routingKey: Topology.jobRoutingKey)
                        _ = confirmed.update { $0.insert(id) }
                        break
                    } catch {
                        // At least once: anything retryable is published again once connected.
                        guard error.isRetryable else { throw error }
                        failedAttempts.update { $0 += 1 }
                        try await publisher.waitUntilConnected(timeout: .seconds(60))
                    }
                }
            }
        }

        // Restart while both sides are busy.
        try await collector.waitFor(300, within: .seconds(30))
        try await onOwnThread {
            try node.stopApp()
            try node.startApp()
        }
        try await publishing.value

        let published = confirmed.get()
        #expect(published.count == total)
        try await collector.waitUntil(within: .seconds(60)) { received in
            published.isSubset(of: Set(received.compactMap(\.message.messageID)))
        }
        // The restart really happened to both connections, and publishing really failed
        // meanwhile: the test exercised recovery, not luck.
        #expect(publisher.status.reconnects >= 1)
        #expect(consumerConnection.status.reconnects >= 1)
        #expect(failedAttempts.get() >= 1)

        await consumer.cancel()
        try await publisher.delete(topology)
        await consumerConnection.close()
        await publisher.close()
    }

    @Test("a broker that stops answering is detected by missed heartbeats and reconnected to")
    func missedHeartbeats() async throws {
        let node = try await onOwnThread { try PrivateRabbitMQNode.start(label: "heartbeat") }
        let pid = try node.serverProcessID()
        defer {
            kill(pid, SIGCONT)
            node.stop()
        }
        var configuration = try Broker.configuration("heartbeat", url: node.amqpURL)
        configuration.heartbeat = .seconds(1)
        configuration.connectTimeout = .seconds(2)
        let topology = Broker.scratchTopology(tiers: [])
        let connection = try await Broker.connect("heartbeat", configuration: configuration, topology: topology)

        #expect(kill(pid, SIGSTOP) == 0)
        let frozen = ContinuousClock.now
        // The broker can neither confirm nor send heartbeats: the publish must fail because
        // the silence is noticed, long before the 60-second confirm timeout.
        await #expect {
            try await connection.publish(Broker.message("{}", id: "frozen"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
        } throws: { error in
            guard case QueueError.confirmationUnknown(let reason) = error else { return false }
            return reason.contains("heartbeat")
        }
        let detectedAfter = ContinuousClock.now - frozen
        #expect(detectedAfter < .seconds(10), "missed heartbeats noticed only after \(detectedAfter)")
        #expect(connection.status.state != .connected)

        #expect(kill(pid, SIGCONT) == 0)
        try await connection.waitUntilConnected(timeout: .seconds(60))
        try await connection.publish(Broker.message("{}", id: "thawed"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
        #expect(connection.status.reconnects >= 1)
        try await connection.delete(topology)
        await connection.close()
    }

    @Test("TLS: a verified amqps connection works; an unknown CA or a wrong host name is refused")
    func tls() async throws {
        let node = try await onOwnThread { try PrivateRabbitMQNode.start(label: "tls", tls: true) }
        defer { node.stop() }

        let topology = Broker.scratchTopology(tiers: [])
        let secure = try await Broker.connect("tls", configuration: Broker.configuration("tls", url: node.amqpsURL()), topology: topology)
        try await secure.publish(Broker.message("{\"secret\":1}", id: "tls-1"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
        let consumer = try await secure.consume(queue: topology.jobsQueue, prefetch: 1)
        let collector = await MessageCollector(consumer, autoAck: true)
        #expect(try await collector.waitFor(1, within: .seconds(10))[0].message.messageID == "tls-1")
        await consumer.cancel()
        await secure.close()

        for (label, url, expected) in [
            ("unknown-ca", node.amqpsURL(caFile: node.otherCAFile), "certificate"),
            ("wrong-host", node.amqpsURL(host: "127.0.0.1"), "hostname"),
        ] {
            let connection = try AMQPConnection(configuration: Broker.configuration(label, url: url), logger: Broker.logger(label))
            await connection.start()
            await #expect {
                try await connection.waitUntilConnected(timeout: .seconds(20))
            } throws: { error in
                guard case QueueError.tlsFailed(_, let reason) = error else { return false }
                return reason.lowercased().contains(expected)
            }
            // Verification failures are configuration errors: no retrying.
            #expect(connection.status.state == .failed, "\(label)")
            await connection.close()
        }
    }
}
