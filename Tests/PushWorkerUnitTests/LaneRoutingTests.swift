import PushModel
import PushQueue
import Testing

@Suite("Lanes route to their queues")
struct LaneRoutingTests {
    @Test("each lane's routing key is the one its queue is bound with")
    func routingKeys() {
        let topology = Topology(prefix: "p")
        let bound = Dictionary(uniqueKeysWithValues: topology.bindings.filter { $0.exchange == topology.jobsExchange }.map { ($0.routingKey, $0.queue) })
        #expect(bound[NotificationJob.Lane.urgent.routingKey] == topology.jobsQueue)
        #expect(bound[NotificationJob.Lane.bulk.routingKey] == topology.bulkJobsQueue)
        #expect(topology.queues.contains { $0.name == "p.jobs.bulk" && $0.arguments["x-queue-type"] == "quorum" })
    }
}
