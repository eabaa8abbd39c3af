@testable import PushQueue
import PushTestSupport
import Testing

@Suite("Consumers: settlement, cancellation, redelivery (real RabbitMQ)")
struct ConsumerTests {
    @Test("settling twice sends nothing the second time and leaves the channel working")
    func doubleSettle() async throws {
        try await Broker.withScratchTopology("double-settle") { topology, connection in
            try await connection.publish(Broker.message("{}", id: "once"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            let consumer = try await connection.consume(queue: topology.jobsQueue, prefetch: 1)
            let collector = await MessageCollector(consumer, autoAck: false)
            let message = try await collector.waitFor(1, within: .seconds(10))[0].message
            #expect(await message.ack() == .settled)
            #expect(await message.ack() == .alreadySettled)
            #expect(await message.nack(requeue: true) == .alreadySettled)
            // A second ack on the wire would have closed the channel (406): it is still open.
            try await connection.publish(Broker.message("{}", id: "after"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            let next = try await collector.waitFor(2, within: .seconds(10))[1].message
            #expect(next.messageID == "after")
            #expect(await next.ack() == .settled)
            #expect(connection.status.reconnects == 0)
        }
    }

    @Test("cancel stops deliveries, yields what was delivered, ends the sequence; those can still be acked")
    func gracefulCancel() async throws {
        try await Broker.withScratchTopology("cancel") { topology, connection in
            let requests = (0..<20).map {
                PublishRequest(exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey, message: Broker.message("{}", id: "c-\($0)"))
            }
            #expect(await connection.publish(requests).allSatisfy { (try? $0.get()) != nil })
            let consumer = try await connection.consume(queue: topology.jobsQueue, prefetch: 5)
            let collector = await MessageCollector(consumer, autoAck: false)
            try await collector.waitFor(5, within: .seconds(10))
            await consumer.cancel()
            #expect(try await collector.waitForEnd(within: .seconds(10)) == nil)
            let delivered = await collector.received
            // The prefetch limit held: nothing beyond the five unacknowledged ones.
            #expect(delivered.count == 5)
            for received in delivered {
                #expect(await received.message.ack() == .settled)
            }
            #expect(try await connection.statistics(queue: topology.jobsQueue).messages == 15)
        }
    }

    @Test("unacknowledged messages are redelivered after the broker drops the consumer's connection; stale acks do nothing")
    func redeliveryAfterSocketDeath() async throws {
        try await Broker.withScratchTopology("redelivery") { topology, publisher in
            for index in 0..<3 {
                try await publisher.publish(Broker.message("{}", id: "r-\(index)"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            }
            let connection = try await Broker.connect("redelivery-consumer")
            let consumer = try await connection.consume(queue: topology.jobsQueue, prefetch: 10)
            let collector = await MessageCollector(consumer, autoAck: false)
            let first = try await collector.waitFor(3, within: .seconds(10))
            #expect(first.allSatisfy { !$0.message.redelivered })

            #expect(try TestServers.closeBrokerConnections(named: "pushd-test-redelivery-consumer") == 1)

            // The consumer resumes on the new connection and gets all three again.
            let all = try await collector.waitFor(6, within: .seconds(30))
            let again = all.suffix(3)
            #expect(Set(again.compactMap(\.message.messageID)) == ["r-0", "r-1", "r-2"])
            #expect(again.allSatisfy { $0.message.redelivered })
            #expect(connection.status.reconnects == 1)
            // Delivery tags of the dead channel mean nothing on the new one.
            for old in first {
                #expect(await old.message.ack() == .stale)
            }
            for fresh in again {
                #expect(await fresh.message.ack() == .settled)
            }
            await consumer.cancel()
            await connection.close()
            // Queue statistics trail the acks a little: poll them, with a deadline.
            let drained = try await PushTestSupport.waitUntil(timeout: .seconds(15)) {
                try await publisher.statistics(queue: topology.jobsQueue).messages == 0
            }
            #expect(drained, "the acked messages left the queue")
        }
    }

    @Test("a message's delivery count grows with each requeue")
    func deliveryCount() async throws {
        try await Broker.withScratchTopology("delivery-count") { topology, connection in
            try await connection.publish(Broker.message("{}", id: "dc"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            let consumer = try await connection.consume(queue: topology.jobsQueue, prefetch: 1)
            let collector = await MessageCollector(consumer, autoAck: false)
            let first = try await collector.waitFor(1, within: .seconds(10))[0].message
            #expect(first.deliveryCount == nil)
            #expect(await first.nack(requeue: true) == .settled)
            let second = try await collector.waitFor(2, within: .seconds(10))[1].message
            #expect(second.redelivered)
            #expect(second.deliveryCount == 1)
            #expect(await second.ack() == .settled)
        }
    }
}
