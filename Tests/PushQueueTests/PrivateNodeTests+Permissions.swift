import Foundation
import PushQueue
import PushTestSupport
import Testing

extension PrivateNodeTests {
    static let definitions = BuildProducts.repositoryRoot.appendingPathComponent("Deploy/rabbitmq")

    @Test("definitions.production.json: a producer can publish jobs but can neither write retry state (retry exchange, default exchange) nor read the retries queue; a worker can both")
    func productionPermissions() async throws {
        try await withPrivateNode("permissions") { node in
            for file in ["definitions.json", "definitions.production.json"] {
                let imported = try node.ctl(["import_definitions", Self.definitions.appendingPathComponent(file).path])
                try #require(imported.status == 0, "\(file): \(imported.errorText)")
            }
            // The import is asynchronous: wait for its last objects.
            let ready = try await waitUntil(timeout: .seconds(30), every: .milliseconds(200)) {
                let users = try node.ctl(["list_users"]).outputText
                let queues = try node.ctl(["list_queues", "name"]).outputText
                return users.contains("pushd-producer") && users.contains("pushd-worker") && queues.contains("pushd.retries")
            }
            try #require(ready)
            for user in ["pushd-producer", "pushd-worker"] {
                try #require(try node.ctl(["change_password", user, "\(user)-secret"]).status == 0)
            }
            func connect(_ user: String) async throws -> AMQPConnection {
                try await node.connect(user) { $0.user = user; $0.password = "\(user)-secret" }
            }
            let production = Topology.production
            let job = Broker.message(#"{"version":1,"job_id":"p-1"}"#, id: "p-1")

            let producer = try await connect("pushd-producer")
            try await producer.publish(job, exchange: production.jobsExchange, routingKey: Topology.jobRoutingKey)
            await #expect(throws: QueueError.self, "a producer cannot publish to the retry exchange") {
                try await producer.publish(job, exchange: production.retryExchange, routingKey: "5s")
            }
            let again = try await connect("pushd-producer")
            await #expect(throws: QueueError.self, "nor straight into the retries queue through the default exchange") {
                try await again.publish(job, exchange: "", routingKey: production.retriesQueue)
            }
            let reader = try await connect("pushd-producer")
            await #expect(throws: QueueError.self, "nor read the retries queue") {
                let consumer = try await reader.consume(queue: production.retriesQueue, prefetch: 1)
                for try await _ in consumer { break }
            }

            let worker = try await connect("pushd-worker")
            try await worker.publish(job, exchange: production.retryExchange, routingKey: "5s")
            let consumer = try await worker.consume(queue: production.retriesQueue, prefetch: 1)
            await consumer.cancel()
            for connection in [producer, again, reader, worker] { await connection.close() }
        }
    }
}
