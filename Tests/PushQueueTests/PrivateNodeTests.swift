import Foundation
import PushQueue
import PushTestSupport
import Testing

/// Faults that would disturb the shared broker, each on a RabbitMQ node of its own. One at a
/// time: each node is a whole Erlang VM. (Further tests in `PrivateNodeTests+…` files.)
@Suite("Broker faults and TLS on private RabbitMQ nodes", .serialized)
struct PrivateNodeTests {
    @Test("the broker restarting (stop_app/start_app) under load loses no confirmed message")
    func brokerRestart() async throws {
        try await withPrivateNode("restart") { node in
            let topology = Broker.scratchTopology(tiers: [])
            let publisher = try await node.connect("restart-publisher", topology: topology)
            let consumerConnection = try await node.connect("restart-consumer", topology: topology)
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
    }
}
