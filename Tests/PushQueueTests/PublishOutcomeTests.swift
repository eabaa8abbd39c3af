import Foundation
import PushQueue
import PushTestSupport
import Testing

@Suite("Publish outcomes reported, not lost (real RabbitMQ)")
struct PublishOutcomeTests {
    @Test("an unroutable mandatory message is returned and reported as unroutable with the broker's reply")
    func unroutable() async throws {
        try await Broker.withScratchTopology("unroutable") { topology, connection in
            await #expect {
                try await connection.publish(Broker.message("{}", id: "lost"), exchange: topology.jobsExchange, routingKey: "no-such-key")
            } throws: { error in
                guard case QueueError.unroutable(let exchange, let key, let code, let text) = error else { return false }
                return exchange == topology.jobsExchange && key == "no-such-key" && code == 312 && text == "NO_ROUTE"
            }
            // A retry to a tier that does not exist is caught the same way.
            await #expect(throws: QueueError.self) {
                try await connection.publish(Broker.message("{}", id: "r"), exchange: topology.retryExchange, routingKey: "7s")
            }
        }
    }

    @Test("in a batch, exactly the unroutable messages fail; the channel keeps working")
    func mixedBatch() async throws {
        try await Broker.withScratchTopology("mixed-batch") { topology, connection in
            let requests = (0..<40).map { index in
                PublishRequest(exchange: topology.jobsExchange, routingKey: index % 3 == 0 ? "nowhere" : Topology.jobRoutingKey,
                               message: Broker.message("{\"n\":\(index)}", id: "same-id"))
            }
            let results = await connection.publish(requests)
            for (index, result) in results.enumerated() {
                switch result {
                case .success: #expect(index % 3 != 0, "message \(index) should have been returned")
                case .failure(let error):
                    #expect(index % 3 == 0, "message \(index) failed: \(error)")
                    if case .unroutable = error {} else { Issue.record("message \(index): \(error)") }
                }
            }
            #expect(try await connection.statistics(queue: topology.jobsQueue).messages == 26)
            try await connection.publish(Broker.message("{}"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
        }
    }

    @Test("a full queue with reject-publish nacks the message: reported as rejectedByBroker")
    func nackedWhenFull() async throws {
        try await Broker.withScratchTopology("nacked") { topology, connection in
            // A length limit from a policy scoped to this test's queue; the queue's own
            // x-overflow: reject-publish turns the overflow into a basic.nack.
            let policy = "\(topology.prefix)-full"
            let pattern = "^" + NSRegularExpression.escapedPattern(for: topology.jobsQueue) + "$"
            try Broker.rabbitmqctl(["set_policy", "--apply-to", "queues", policy, pattern, #"{"max-length":2}"#])
            defer { _ = try? Broker.rabbitmqctl(["clear_policy", policy]) }

            var outcome: QueueError?
            var confirmed = 0
            for index in 0..<200 where outcome == nil {
                do throws(QueueError) {
                    try await connection.publish(Broker.message("{}", id: "f-\(index)"), exchange: topology.jobsExchange,
                                                 routingKey: Topology.jobRoutingKey)
                    confirmed += 1
                } catch {
                    outcome = error
                }
            }
            guard case .rejectedByBroker(let exchange, let key) = outcome else {
                Issue.record("expected a nack once the queue held 2 messages, got \(String(describing: outcome))")
                return
            }
            #expect(exchange == topology.jobsExchange && key == Topology.jobRoutingKey)
            #expect(outcome?.isRetryable == true)
            // Every confirmed message is there (some may predate the policy), the nacked one is not.
            #expect(confirmed >= 2)
            #expect(try await connection.statistics(queue: topology.jobsQueue).messages == confirmed)
        }
    }

    @Test("without mandatory, an unroutable message is confirmed and dropped, as AMQP defines")
    func notMandatory() async throws {
        try await Broker.withScratchTopology("not-mandatory") { topology, connection in
            try await connection.publish(Broker.message("{}"), exchange: topology.jobsExchange, routingKey: "nowhere", mandatory: false)
            // Queue statistics trail the acks a little: poll them, with a deadline.
            #expect(try await PushTestSupport.waitUntil(timeout: .seconds(15)) {
                try await connection.statistics(queue: topology.jobsQueue).messages == 0
            })
        }
    }

    @Test("publishing to a missing exchange fails with 404 and the connection recovers")
    func missingExchange() async throws {
        try await Broker.withScratchTopology("missing-exchange") { topology, connection in
            await #expect {
                try await connection.publish(Broker.message("{}"), exchange: "\(topology.prefix).nope", routingKey: "k")
            } throws: { error in
                // The broker closes the channel; the publish's fate is reported as unknown
                // with the broker's reason.
                guard case QueueError.confirmationUnknown(let reason) = error else { return false }
                return reason.contains("404") && reason.contains("NOT_FOUND")
            }
            try await connection.waitUntilConnected(timeout: .seconds(10))
            try await connection.publish(Broker.message("{}"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            #expect(connection.status.reconnects >= 1)
        }
    }
}
