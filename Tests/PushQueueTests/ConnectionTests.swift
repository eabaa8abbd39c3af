import PushQueue
import PushRuntime
import PushTestSupport
import Testing

@Suite("Connection set-up, failures and topology (real RabbitMQ)")
struct ConnectionTests {
    @Test("the production topology declares cleanly against the broker's (definitions.json-provisioned) one")
    func productionTopology() async throws {
        // Identical declarations are idempotent; any difference would be 406.
        let connection = try await Broker.connect("production-topology", topology: .production)
        try await connection.declare(.production, mode: .verify)
        #expect(connection.status.isHealthy)
        await connection.close()
    }

    @Test("a publishing connection declares the exchanges only when it first connects, and everything when it reconnects")
    func exchangesUntilReconnectScope() async throws {
        let topology = Broker.scratchTopology()
        let admin = try await Broker.connect("exchanges-first-admin")
        let publisher = try AMQPConnection(
            configuration: Broker.configuration("exchanges-first"), topology: topology, topologyScope: .exchangesUntilReconnect,
            logger: Broker.logger("exchanges-first"))
        func cleanUp() async {
            await publisher.close()
            try? await admin.delete(topology)
            await admin.close()
        }
        do {
            await publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(20))
            // Every exchange exists: a publish to a missing one would close the channel (404);
            // not mandatory, since no queue is bound to take it.
            for exchange in topology.exchanges {
                try await publisher.publish(Broker.message("{}"), exchange: exchange.name, routingKey: "nowhere", mandatory: false)
            }
            for queue in topology.queues {
                await #expect {
                    _ = try await admin.statistics(queue: queue.name)
                } throws: { error in
                    guard case QueueError.channelClosedByBroker(404, _) = error else { return false }
                    return true
                }
            }
            // A reconnect declares the queues and bindings too: a job routed to the jobs queue
            // arrives there.
            #expect(try TestServers.closeBrokerConnections(named: "pushd-test-exchanges-first") == 1)
            let reconnected = await PushTestSupport.waitUntil(timeout: .seconds(30)) { publisher.status.reconnects == 1 }
            #expect(reconnected)
            try await publisher.waitUntilConnected(timeout: .seconds(30))
            try await publisher.publish(Broker.message("{}", id: "routed"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            #expect(try await admin.statistics(queue: topology.jobsQueue).messages == 1)
            for queue in topology.queues where queue.name != topology.jobsQueue {
                #expect(try await admin.statistics(queue: queue.name).messages == 0)
            }
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }

    @Test("a mismatching declaration is reported as topologyMismatch and costs only the admin channel")
    func topologyMismatch() async throws {
        try await Broker.withScratchTopology("mismatch") { topology, connection in
            let consumer = try await connection.consume(queue: topology.jobsQueue, prefetch: 1)
            let collector = await MessageCollector(consumer, autoAck: true)
            let other = Topology(prefix: topology.prefix, retryTiers: [.init(name: "1s", delay: .seconds(2))])
            await #expect {
                try await connection.declare(other)
            } throws: { error in
                guard case QueueError.topologyMismatch(let text) = error else { return false }
                return text.contains("x-message-ttl")
            }
            // Deliveries on the data channel were not disturbed.
            try await connection.publish(Broker.message("{}", id: "still"), exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey)
            #expect(try await collector.waitFor(1, within: .seconds(10))[0].message.messageID == "still")
            #expect(connection.status.reconnects == 0)
            await consumer.cancel()
        }
    }

    @Test("wrong credentials fail for good with loginRefused, without retrying")
    func wrongPassword() async throws {
        var configuration = try Broker.configuration("wrong-password")
        configuration.password = "definitely-not-the-password"
        let connection = try AMQPConnection(configuration: configuration, logger: Broker.logger("wrong-password"))
        await connection.start()
        await #expect {
            try await connection.waitUntilConnected(timeout: .seconds(15))
        } throws: { error in
            guard case QueueError.loginRefused(let user, _, let reason) = error else { return false }
            return user == configuration.user && reason.contains("ACCESS_REFUSED") && !"\(error)".contains("definitely-not")
        }
        #expect(connection.status.state == .failed)
        await #expect(throws: QueueError.self) {
            try await connection.publish(Broker.message("{}"), exchange: "", routingKey: "x")
        }
        await connection.close()
    }

    @Test("while the broker is unreachable the connection keeps retrying and says why")
    func unreachable() async throws {
        var configuration = try Broker.configuration("unreachable")
        configuration.host = "127.0.0.1"
        configuration.port = 1  // nothing listens there
        let connection = try AMQPConnection(configuration: configuration, logger: Logger(label: "test.unreachable", minimumLevel: .error))
        await connection.start()
        await #expect {
            try await connection.waitUntilConnected(timeout: .seconds(1))
        } throws: { error in
            guard case QueueError.timedOut(let text) = error else { return false }
            return text.contains("cannot connect to RabbitMQ at 127.0.0.1:1")
        }
        let status = connection.status
        #expect(status.state == .reconnecting || status.state == .connecting)
        #expect(status.failedAttempts >= 1)
        #expect(!status.isHealthy)
        if case .connectFailed = status.lastError {} else { Issue.record("last error: \(String(describing: status.lastError))") }
        await #expect {
            try await connection.publish(Broker.message("{}"), exchange: "", routingKey: "x")
        } throws: { error in
            guard case QueueError.notConnected = error else { return false }
            return (error as? QueueError)?.isRetryable == true
        }
        await connection.close()
        #expect(connection.status.state == .closed)
    }

    @Test("as a Service it runs until shutdown is signalled, then closes; a permanent failure ends run with the error")
    func service() async throws {
        let connection = try AMQPConnection(configuration: Broker.configuration("service"), logger: Broker.logger("service"))
        let shutdown = ShutdownSignal()
        let running = Task { try await connection.run(shutdown: shutdown) }
        try await connection.waitUntilConnected(timeout: .seconds(20))
        #expect(connection.status.isHealthy)
        shutdown.trigger()
        try await running.value
        #expect(connection.status.state == .closed)

        var configuration = try Broker.configuration("service-refused")
        configuration.password = "wrong"
        let refused = try AMQPConnection(configuration: configuration, logger: Broker.logger("service-refused"))
        await #expect {
            try await refused.run(shutdown: ShutdownSignal())
        } throws: { error in
            if case QueueError.loginRefused = error { return true }
            return false
        }
    }

    @Test("after close, publishing fails with closed and the status says closed")
    func closed() async throws {
        let connection = try await Broker.connect("closed")
        #expect(connection.status.isHealthy)
        await connection.close()
        #expect(connection.status.state == .closed)
        await #expect {
            try await connection.publish(Broker.message("{}"), exchange: "", routingKey: "x")
        } throws: { error in
            guard case QueueError.closed = error else { return false }
            return true
        }
    }
}
