import Foundation
import PushQueue
import Testing

extension PrivateNodeTests {
    @Test("a broker that stops answering is detected by missed heartbeats and reconnected to")
    func missedHeartbeats() async throws {
        try await withPrivateNode("heartbeat") { node in
            let pid = try node.serverProcessID()
            defer { kill(pid, SIGCONT) }
            let topology = Broker.scratchTopology(tiers: [])
            let connection = try await node.connect("heartbeat", topology: topology) { configuration in
                configuration.heartbeat = .seconds(1)
                configuration.connectTimeout = .seconds(2)
            }

            #expect(kill(pid, SIGSTOP) == 0)
            let frozen = ContinuousClock.now
            // The broker can neither confirm nor send heartbeats: the publish must fail because
            // the silence is noticed, long before the 60-second confirm timeout.
            await #expect {
                try await connection.publish(Broker.message("{}", id: "frozen"), exchange: topology.jobsExchange,
                                             routingKey: Topology.jobRoutingKey)
            } throws: { error in
                guard case QueueError.confirmationUnknown(let reason) = error else { return false }
                return reason.contains("heartbeat")
            }
            let detectedAfter = ContinuousClock.now - frozen
            #expect(detectedAfter < .seconds(10), "missed heartbeats noticed only after \(detectedAfter)")
            #expect(connection.status.state != .connected)

            #expect(kill(pid, SIGCONT) == 0)
            try await connection.waitUntilConnected(timeout: .seconds(60))
            try await connection.publish(Broker.message("{}", id: "thawed"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            #expect(connection.status.reconnects >= 1)
            try await connection.delete(topology)
            await connection.close()
        }
    }

    @Test("a memory alarm blocks publishing: reported in the status and as brokerBlocked, then lifted")
    func memoryAlarm() async throws {
        try await withPrivateNode("alarm") { node in
            let topology = Broker.scratchTopology(tiers: [])
            let connection = try await node.connect("alarm", topology: topology)
            try await connection.publish(Broker.message("{}", id: "before"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)

            _ = try await onOwnThread { try node.ctl(["set_vm_memory_high_watermark", "0.00001"]) }
            // RabbitMQ blocks a connection when it next publishes; this publish may wait for
            // the alarm to clear or fail fast, but it must not be lost or hang the connection.
            let blockedPublish = Task {
                try await connection.publish(Broker.message("{}", id: "during"), exchange: topology.jobsExchange,
                                             routingKey: Topology.jobRoutingKey)
            }
            let blocked = try await eventually(within: .seconds(30)) { connection.status.blockedReason != nil }
            #expect(blocked, "no connection.blocked seen")
            #expect(!connection.status.isHealthy)
            await #expect {
                try await connection.publish(Broker.message("{}", id: "refused"), exchange: topology.jobsExchange,
                                             routingKey: Topology.jobRoutingKey)
            } throws: { error in
                guard case QueueError.brokerBlocked(let reason) = error else { return false }
                return reason.contains("memory")
            }

            _ = try await onOwnThread { try node.ctl(["set_vm_memory_high_watermark", "0.4"]) }
            let unblocked = try await eventually(within: .seconds(30)) { connection.status.blockedReason == nil }
            #expect(unblocked)
            try await blockedPublish.value
            try await connection.publish(Broker.message("{}", id: "after"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            #expect(try await connection.statistics(queue: topology.jobsQueue).messages == 3)
            #expect(connection.status.reconnects == 0)
            try await connection.delete(topology)
            await connection.close()
        }
    }
}
