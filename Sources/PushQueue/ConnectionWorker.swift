import Foundation
import PushRuntime

/// The thread that owns one rabbitmq-c connection and everything that must not be shared:
/// the `RawConnection` and the `AMQPConnectionStateMachine`.
///
/// rabbitmq-c is neither thread-safe nor non-blocking, so every C call happens here, and a
/// blocking call stalls only this thread, never Swift's cooperative pool. Callers reach it
/// only through the `Mailbox` (the shape of `CurlMultiLoop`). Each turn it carries out the
/// requests posted, sends the publishes and settlements, reads what the broker sent, and
/// blocks in `poll` (on the socket and the mailbox's wakeup pipe) only when nobody is
/// waiting — at most every `pollInterval`, which is when rabbitmq-c sends and checks
/// heartbeats. Between connections it sleeps out the backoff the state machine chose,
/// woken early by requests.
///
/// The thread exits once the state machine has finished (closed, or given up) and everyone
/// waiting has been answered.
final class ConnectionWorker {
    typealias Machine = AMQPConnectionStateMachine<
        CheckedContinuation<Result<Void, QueueError>, Never>,
        AsyncThrowingStream<QueueMessage, any Error>.Continuation,
        ConfirmWaiter
    >

    let shared: ConnectionShared
    var machine: Machine
    var raw: RawConnection?
    var lastHeartbeatService = ContinuousClock.now

    var configuration: AMQPConfiguration { shared.configuration }
    var logger: Logger { shared.logger }
    var mailbox: Mailbox { shared.mailbox }

    init(shared: ConnectionShared) {
        self.shared = shared
        self.machine = Machine(endpoints: shared.configuration.endpoints, backoff: shared.configuration.reconnectBackoff,
                               confirmTimeout: shared.configuration.confirmTimeout)
    }

    /// Starts the thread. It holds `shared` (not the `AMQPConnection`), so dropping the
    /// connection can close it.
    static func spawn(_ shared: ConnectionShared, name: String) {
        ThreadName.startThread(named: "pushd-\(name)") { ConnectionWorker(shared: shared).run() }
    }

    private func run() {
        while !machine.isFinished {
            handleCommands()
            switch machine.phase {
            case .connected, .closing:
                if let raw { serveTurn(raw) }
                if machine.closeDue(now: .now) { completeClose() }
            case .reconnecting(_, let at):
                if let connect = machine.reconnectDue(now: .now) {
                    perform(connect)
                } else {
                    mailbox.wakeup.wait(timeout: at - .now) { mailbox.hasWork }
                }
            case .idle:
                mailbox.wakeup.wait(timeout: .seconds(1)) { mailbox.hasWork }
            case .connecting, .finished:
                break
            }
        }
    }

    /// Publishes the state machine's status, so that whoever is woken next sees it.
    func publishStatus() {
        shared.publish(machine.status)
    }

    // MARK: Connecting

    /// Opens a connection, declares the topology and resumes the consumers: everything a
    /// fresh connection needs before it is handed to callers.
    func perform(_ connect: Machine.Connect) {
        publishStatus()
        let endpoint = configuration.endpoints[connect.endpoint]
        let generation = shared.ledger.startGeneration()
        var consumerGone: UInt64?
        do throws(QueueError) {
            let connection = try RawConnection(configuration: configuration, endpoint: endpoint)
            if let topology = shared.topology {
                // `TopologyScope.exchangesUntilReconnect` goes by whether a connect has
                // succeeded before (the machine learns of this one below).
                let exchangesOnly = shared.topologyScope == .exchangesUntilReconnect && !machine.hasConnected
                try AMQPConnection.declare(topology, mode: shared.topologyMode, exchangesOnly: exchangesOnly, on: connection)
            }
            for spec in connect.consumers {
                do {
                    try connection.consume(queue: spec.queue, consumerTag: spec.tag, prefetch: spec.prefetch)
                } catch {
                    // The queue is gone: this consumer cannot resume, the others can.
                    if case .channelClosedByBroker(404, _) = error { consumerGone = spec.id }
                    throw error
                }
            }
            raw = connection
            lastHeartbeatService = .now
            mailbox.open()
            let waiters = machine.connectSucceeded(now: .now)
            publishStatus()
            logger.info(machine.status.reconnects > 0 ? "amqp reconnected" : "amqp connected", [
                "endpoint": .string(endpoint.description), "generation": .int(Int(generation)),
                "heartbeat_s": .int(connection.heartbeatSeconds), "consumers": .int(machine.consumers.count),
            ])
            for waiter in waiters { waiter.resume(returning: .success(())) }
        } catch {
            shared.ledger.endGeneration()
            handleFailure(machine.connectFailed(error, consumerGone: consumerGone, now: .now, jitter: .random(in: 0...1)),
                   endpoint: endpoint)
        }
    }

    /// The connection in use failed: drop it and carry on as the state machine says.
    func connectionLost(_ error: QueueError) {
        let endpoint = machine.currentEndpoint.map { configuration.endpoints[$0] }
        raw = nil
        shared.ledger.endGeneration()
        handleFailure(machine.connectionLost(error, now: .now, jitter: .random(in: 0...1)), endpoint: endpoint)
    }

    /// Outstanding confirms fail (retryable, outcome unknown), the dead connection's
    /// deliveries are stale (the ledger's generation ended), its consumers wait for the
    /// next connection — or, if the state machine gives up, everyone is answered.
    private func handleFailure(_ failure: Machine.Failure, endpoint: AMQPEndpoint?) {
        // The status first, so that whoever is woken below already sees the connection down.
        publishStatus()
        for item in mailbox.shut(failure.refusal) { item.refuse(failure.refusal) }
        resolve(failure.confirms)
        failure.removedConsumer?.finish(throwing: failure.error)
        switch failure.next {
        case .reconnect(let next, let delay, let attempt):
            logger.warning("amqp connection failed; reconnecting", [
                "error": .string(failure.error.description),
                "endpoint": .string(endpoint?.description ?? "none"),
                "next_endpoint": .string(configuration.endpoints[next].description),
                "attempt": .int(attempt), "delay_ms": .int(Int(Topology.milliseconds(delay))),
            ])
        case .finish(let finish):
            if let error = finish.error {
                logger.error("amqp connection failed permanently", [
                    "error": .string(error.description), "endpoint": .string(endpoint?.description ?? "none"),
                ])
            }
            complete(finish)
        }
    }

    // MARK: Closing

    /// `close()`: refuse new publishes, stop the consumers (their sequences end after what
    /// was already delivered), then serve until the confirms are in or the grace period is
    /// over. Not connected: finish at once.
    func requestClose() {
        let action = machine.close(now: .now, gracePeriod: configuration.closeGracePeriod)
        switch action {
        case .none:
            return
        case .finish(let finish):
            for item in mailbox.shut(.closed) { item.refuse(.closed) }
            complete(finish)
        case .drain(let ids):
            for item in mailbox.shut(.closed) { item.refuse(.closed) }
            logger.info("amqp connection closing", ["unconfirmed": .int(machine.confirms.waitingCount)])
            for id in ids { stopConsumer(id) }
            if machine.closeDue(now: .now) { completeClose() }
        }
    }

    /// The AMQP close handshake, if the connection is still alive, then the end.
    private func completeClose() {
        if let raw, raw.failure == nil {
            raw.close(timeout: .seconds(2))
        }
        complete(machine.closeCompleted())
    }

    /// Answers everyone still waiting and lets the thread exit.
    private func complete(_ finish: Machine.Finish) {
        raw = nil
        shared.ledger.endGeneration()
        publishStatus()
        let reason = finish.error ?? .closed
        let (items, commands) = mailbox.finish(reason)
        for item in items { item.refuse(reason) }
        resolve(finish.confirms)
        for consumer in finish.consumers {
            if let error = finish.error { consumer.finish(throwing: error) } else { consumer.finish() }
        }
        for waiter in finish.connectWaiters { waiter.resume(returning: .failure(reason)) }
        for command in commands { command.refuse(reason) }
        logger.info("amqp connection finished", ["error": .string(finish.error?.description ?? "none")])
        shared.finish(finish.error)
    }

    func resolve(_ resolutions: [Machine.Resolution]) {
        for (waiter, result) in resolutions { waiter.resume(with: result) }
    }
}
