@testable import PushQueue
import PushTestSupport
import Testing

@Suite("Several brokers: failover (real RabbitMQ)")
struct FailoverTests {
    @Test("the first endpoint refuses connections: the connection fails over to the next, and back round robin")
    func firstEndpointDown() async throws {
        let closedPort = try FreePort.find()
        var configuration = try Broker.configuration("failover")
        let broker = try #require(configuration.endpoints.first)
        configuration.endpoints.insert(AMQPEndpoint(host: "127.0.0.1", port: closedPort), at: 0)
        let topology = Broker.scratchTopology(tiers: [])
        let connection = try await Broker.connect("failover", configuration: configuration, topology: topology)
        #expect(connection.status.endpoint == broker.description)
        // The refused attempt is kept for diagnosis and names the endpoint it was for.
        guard case .connectFailed(let endpoint, _) = connection.status.lastError else {
            Issue.record("last error: \(String(describing: connection.status.lastError))"); return
        }
        #expect(endpoint == "127.0.0.1:\(closedPort)")

        let consumer = try await connection.consume(queue: topology.jobsQueue, prefetch: 5)
        let collector = await MessageCollector(consumer, autoAck: true)
        try await connection.publish(Broker.message("{}", id: "before"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
        try await collector.waitFor(1, within: .seconds(10))

        // Losing the broker moves on to the (dead) first endpoint, then round to the broker
        // again, where the consumer resumes.
        #expect(try TestServers.closeBrokerConnections(named: "pushd-test-failover") == 1)
        let reconnected = await PushTestSupport.waitUntil(timeout: .seconds(30)) { connection.status.reconnects == 1 }
        #expect(reconnected)
        try await connection.waitUntilConnected(timeout: .seconds(30))
        #expect(connection.status.endpoint == broker.description)
        try await connection.publish(Broker.message("{}", id: "after"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
        // "before" may come twice: its ack can have been lost with the socket.
        try await collector.waitUntil(within: .seconds(10)) { received in
            received.contains { $0.message.messageID == "after" }
        }
        #expect(await collector.received.last?.message.messageID == "after")

        await consumer.cancel()
        try await connection.delete(topology)
        await connection.close()
    }
}

extension PrivateNodeTests {
    @Test("two brokers: when the first stops, publisher and consumer carry on with the second")
    func failoverBetweenNodes() async throws {
        try await withPrivateNode("failover-a") { first in
            try await withPrivateNode("failover-b") { second in
                // Each node has queues of its own: the topology is declared on every connect.
                let topology = Broker.scratchTopology(tiers: [])
                let urls = "\(first.amqpURL),\(second.amqpURL)"
                let publisher = try await Broker.connect(
                    "failover-publisher", configuration: Broker.configuration("failover-publisher", url: urls), topology: topology)
                let consumerConnection = try await Broker.connect(
                    "failover-consumer", configuration: Broker.configuration("failover-consumer", url: urls), topology: topology)
                #expect(publisher.status.endpoint == "127.0.0.1:\(first.amqpPort)")
                let consumer = try await consumerConnection.consume(queue: topology.jobsQueue, prefetch: 10)
                let collector = await MessageCollector(consumer, autoAck: true)
                try await publisher.publish(Broker.message("{}", id: "on-first"), exchange: topology.jobsExchange,
                                            routingKey: Topology.jobRoutingKey)
                try await collector.waitFor(1, within: .seconds(10))

                try await onOwnThread { try first.stopApp() }

                // At least once: a publish that fails retryably goes again once reconnected.
                var attempts = 0
                while true {
                    attempts += 1
                    do throws(QueueError) {
                        try await publisher.publish(Broker.message("{}", id: "on-second"), exchange: topology.jobsExchange,
                                                    routingKey: Topology.jobRoutingKey)
                        break
                    } catch {
                        guard error.isRetryable, attempts < 20 else { throw error }
                        try await publisher.waitUntilConnected(timeout: .seconds(30))
                    }
                }
                #expect(publisher.status.endpoint == "127.0.0.1:\(second.amqpPort)")
                #expect(publisher.status.reconnects == 1)
                try await collector.waitUntil(within: .seconds(30)) { received in
                    received.contains { $0.message.messageID == "on-second" }
                }
                #expect(consumerConnection.status.endpoint == "127.0.0.1:\(second.amqpPort)")
                #expect(consumerConnection.status.reconnects == 1)

                await consumer.cancel()
                try await publisher.delete(topology)
                await consumerConnection.close()
                await publisher.close()
            }
        }
    }
}
