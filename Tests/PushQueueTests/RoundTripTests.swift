import Foundation
import PushQueue
import PushTestSupport
import Testing

@Suite("Publish, confirm, consume, acknowledge (real RabbitMQ)")
struct RoundTripTests {
    @Test("a confirmed message arrives with its body, id, content type and headers, and an ack removes it")
    func roundTrip() async throws {
        try await Broker.withScratchTopology("round-trip") { topology, connection in
            let headers: [String: HeaderValue] = [
                "x-pushd-attempt": 3, "x-pushd-reason": "apns 503", "x-flag": true,
                "x-nested": .table(["a": .array([1, "two"])]),
            ]
            let body = #"{"job_id":"j-1","text":"grüße ✓"}"#
            try await connection.publish(
                Broker.message(body, id: "j-1", headers: headers), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)

            let consumer = try await connection.consume(queue: topology.jobsQueue, prefetch: 10)
            let collector = await MessageCollector(consumer, autoAck: false)
            let received = try await collector.waitFor(1, within: .seconds(10))[0].message
            #expect(String(decoding: received.body, as: UTF8.self) == body)
            #expect(received.messageID == "j-1")
            #expect(received.contentType == "application/json")
            #expect(received.persistent)
            #expect(received.routingKey == Topology.jobRoutingKey)
            #expect(received.exchange == topology.jobsExchange)
            #expect(received.queue == topology.jobsQueue)
            #expect(!received.redelivered)
            for (key, value) in headers {
                #expect(received.headers[key] == value, "header \(key)")
            }
            #expect(await received.ack() == .settled)
            await consumer.cancel()
            #expect(try await collector.waitForEnd(within: .seconds(10)) == nil)
            // Unacknowledged messages would be ready again now that the consumer is gone.
            // Queue statistics trail the acks a little: poll them, with a deadline.
            #expect(try await PushTestSupport.waitUntil(timeout: .seconds(15)) {
                try await connection.statistics(queue: topology.jobsQueue).messages == 0
            })
        }
    }

    @Test("a batch of pipelined publishes is confirmed in order and all of it is consumed")
    func batch() async throws {
        try await Broker.withScratchTopology("batch") { topology, connection in
            let requests = (0..<500).map { index in
                PublishRequest(exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey,
                               message: Broker.message("{\"n\":\(index)}", id: "m-\(index)"))
            }
            let results = await connection.publish(requests)
            #expect(results.count == 500)
            #expect(results.allSatisfy { (try? $0.get()) != nil })

            // Concurrent single publishes share the channel and each awaits its own confirm.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 500..<600 {
                    group.addTask {
                        try await connection.publish(Broker.message("{\"n\":\(index)}", id: "m-\(index)"),
                                                     exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
                    }
                }
                try await group.waitForAll()
            }

            let consumer = try await connection.consume(queue: topology.jobsQueue, prefetch: 50)
            let collector = await MessageCollector(consumer, autoAck: true)
            let received = try await collector.waitFor(600, within: .seconds(30))
            #expect(Set(received.compactMap(\.message.messageID)) == Set((0..<600).map { "m-\($0)" }))
            // Order within the batch is kept by the queue.
            let batchOrder = received.compactMap(\.message.messageID).filter { (Int($0.dropFirst(2)) ?? .max) < 500 }
            #expect(batchOrder == (0..<500).map { "m-\($0)" })
            await consumer.cancel()
        }
    }
}
