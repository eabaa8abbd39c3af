import PushQueue
import Testing

extension PrivateNodeTests {
    @Test("TLS: a verified amqps connection works; an unknown CA, the system's store without the node's CA, or a wrong host name is refused")
    func tls() async throws {
        try await withPrivateNode("tls", tls: true) { node in
            let topology = Broker.scratchTopology(tiers: [])
            let secure = try await Broker.connect("tls", configuration: Broker.configuration("tls", url: node.amqpsURL()), topology: topology)
            try await secure.publish(Broker.message("{\"secret\":1}", id: "tls-1"), exchange: topology.jobsExchange,
                                     routingKey: Topology.jobRoutingKey)
            let consumer = try await secure.consume(queue: topology.jobsQueue, prefetch: 1)
            let collector = await MessageCollector(consumer, autoAck: true)
            #expect(try await collector.waitFor(1, within: .seconds(10))[0].message.messageID == "tls-1")
            await consumer.cancel()
            await secure.close()

            for (label, url, expected) in [
                ("unknown-ca", node.amqpsURL(caFile: node.otherCAFile), "peer cert verification failed, trusting the ca file \(node.otherCAFile.lowercased())"),
                ("system-store", node.amqpsURLTrustingTheSystem(), "peer cert verification failed, trusting the system's ca"),
                ("wrong-host", node.amqpsURL(host: "127.0.0.1"), "hostname verification failed"),
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
}
