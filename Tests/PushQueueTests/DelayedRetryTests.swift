import PushQueue
import Testing

@Suite("Delayed retries (real RabbitMQ)")
struct DelayedRetryTests {
    @Test("a retry arrives on the retries queue (never the producers' jobs queue) after its tier's delay, not before")
    func retryDelay() async throws {
        let delay = Duration.seconds(1)
        try await Broker.withScratchTopology("retry", tiers: [.init(name: "1s", delay: delay)]) { topology, connection in
            let jobs = try await connection.consume(queue: topology.retriesQueue, prefetch: 5)
            let collector = await MessageCollector(jobs, autoAck: true)
            let tier = try #require(topology.retryTier(named: "1s"))

            // The TTL starts when the broker enqueues the message, which is after this
            // instant: arriving earlier than `sent + delay` would be a bug.
            let sent = ContinuousClock.now
            try await connection.publish(
                Broker.message("{\"job_id\":\"j-42\"}", id: "j-42", headers: ["x-pushd-attempt": 2]),
                exchange: topology.retryExchange, routingKey: tier.name)
            let confirmed = ContinuousClock.now

            let arrival = try await collector.waitFor(1, within: .seconds(30))[0]
            let waited = arrival.at - sent
            #expect(waited >= delay, "arrived after \(waited), before the \(delay) delay")
            #expect(arrival.at - confirmed < delay + .seconds(5), "arrived only after \(waited)")
            #expect(arrival.message.messageID == "j-42")
            #expect(arrival.message.routingKey == Topology.dueRoutingKey)
            #expect(arrival.message.queue == topology.retriesQueue)
            #expect(arrival.message.headers["x-pushd-attempt"] == 2)
            let death = try #require(arrival.message.headers["x-death"]?.arrayValue?.first?.tableValue)
            #expect(death["reason"] == "expired")
            #expect(death["queue"] == .string(topology.retryQueue(tier)))
        }
    }
}
