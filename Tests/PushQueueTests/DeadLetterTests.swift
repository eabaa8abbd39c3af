import PushQueue
import PushTestSupport
import Testing

@Suite("Dead letters (real RabbitMQ)")
struct DeadLetterTests {
    @Test("reject and nack without requeue move a job to the dead-letter queue with x-death")
    func rejectAndNack() async throws {
        try await Broker.withScratchTopology("dead-letter") { topology, connection in
            for id in ["rejected-1", "nacked-1"] {
                try await connection.publish(Broker.message("{}", id: id), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            }
            let jobs = try await connection.consume(queue: topology.jobsQueue, prefetch: 5)
            let jobCollector = await MessageCollector(jobs, autoAck: false)
            let delivered = try await jobCollector.waitFor(2, within: .seconds(10))
            for received in delivered {
                let outcome = received.message.messageID == "rejected-1"
                    ? await received.message.reject() : await received.message.nack(requeue: false)
                #expect(outcome == .settled)
            }

            let dead = try await connection.consume(queue: topology.deadQueue, prefetch: 5)
            let deadCollector = await MessageCollector(dead, autoAck: true)
            let letters = try await deadCollector.waitFor(2, within: .seconds(10))
            #expect(Set(letters.compactMap(\.message.messageID)) == ["rejected-1", "nacked-1"])
            for letter in letters {
                #expect(letter.message.headers["x-first-death-reason"] == "rejected")
                #expect(letter.message.headers["x-first-death-queue"] == .string(topology.jobsQueue))
                let death = try #require(letter.message.headers["x-death"]?.arrayValue?.first?.tableValue)
                #expect(death["reason"] == "rejected")
                #expect(death["queue"] == .string(topology.jobsQueue))
            }
            // Queue statistics trail the acks a little: poll them, with a deadline.
            #expect(try await PushTestSupport.waitUntil(timeout: .seconds(15)) {
                try await connection.statistics(queue: topology.jobsQueue).messages == 0
            })
        }
    }

    @Test("a job published to the dead-letter exchange keeps its x-pushd-reason header")
    func explicitDeadLetter() async throws {
        try await Broker.withScratchTopology("explicit-dead-letter") { topology, connection in
            let reason: HeaderValue = "payload: missing recipients"
            try await connection.publish(
                Broker.message("{}", id: "job-9", headers: ["x-pushd-reason": reason, "x-pushd-attempts": 3]),
                exchange: topology.deadExchange, routingKey: "")
            let dead = try await connection.consume(queue: topology.deadQueue, prefetch: 1)
            let collector = await MessageCollector(dead, autoAck: true)
            let letter = try await collector.waitFor(1, within: .seconds(10))[0].message
            #expect(letter.messageID == "job-9")
            #expect(letter.headers["x-pushd-reason"] == reason)
            #expect(letter.headers["x-pushd-attempts"] == 3)
        }
    }
}
