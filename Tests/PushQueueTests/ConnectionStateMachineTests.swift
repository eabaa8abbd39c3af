@testable import PushQueue
import PushRuntime
import Testing

@Suite("Connection state machine (no broker)")
struct ConnectionStateMachineTests {
    typealias Machine = AMQPConnectionStateMachine<String, String, String>

    static let backoff = Backoff(base: .milliseconds(100), cap: .seconds(1))
    static let refused = QueueError.connectFailed(endpoint: "a:5672", reason: "refused")
    static let lost = QueueError.connectionLost(reason: "socket closed")

    static func machine(endpoints: Int = 1) -> Machine {
        Machine(endpoints: (0..<endpoints).map { AMQPEndpoint(host: "node\($0)", port: 5672) }, backoff: backoff,
                confirmTimeout: .seconds(60))
    }

    /// A machine that has connected to its first endpoint at `now`.
    static func connected(endpoints: Int = 1, now: ContinuousClock.Instant) -> Machine {
        var machine = machine(endpoints: endpoints)
        _ = machine.start()
        _ = machine.connectSucceeded(now: now)
        return machine
    }

    /// The reconnect a failure asks for, or nil if it asked to finish.
    static func reconnect(_ failure: Machine.Failure) -> (endpoint: Int, delay: Duration, attempt: Int)? {
        guard case .reconnect(let endpoint, let delay, let attempt) = failure.next else { return nil }
        return (endpoint, delay, attempt)
    }

    static func finish(_ failure: Machine.Failure) -> Machine.Finish? {
        guard case .finish(let finish) = failure.next else { return nil }
        return finish
    }

    @Test("failed attempts back off exponentially (scaled by the jitter); a success resets the backoff")
    func reconnectBackoff() throws {
        var machine = Self.machine()
        let start = ContinuousClock.now
        let connect = machine.start()
        #expect(connect == Machine.Connect(endpoint: 0, consumers: []))
        let again = machine.start()
        #expect(again == nil, "a second start does nothing")
        #expect(machine.status.state == .connecting)

        var failure = machine.connectFailed(Self.refused, now: start, jitter: 1)
        let first = try #require(Self.reconnect(failure))
        #expect(first.delay == .milliseconds(100) && first.attempt == 1)
        #expect(machine.status.state == .reconnecting && machine.status.failedAttempts == 1)
        #expect(machine.status.lastError == Self.refused)
        let early = machine.reconnectDue(now: start + .milliseconds(99))
        #expect(early == nil, "not before the delay")
        let due = machine.reconnectDue(now: start + .milliseconds(100))
        #expect(due == Machine.Connect(endpoint: 0, consumers: []))

        failure = machine.connectFailed(Self.refused, now: start, jitter: 1)
        let second = try #require(Self.reconnect(failure))
        #expect(second.delay == .milliseconds(200))
        _ = machine.reconnectDue(now: start + .seconds(1))
        failure = machine.connectFailed(Self.refused, now: start, jitter: 0.5)
        let halved = try #require(Self.reconnect(failure))
        #expect(halved.delay == .milliseconds(200), "full jitter: 400 ms scaled by 0.5")
        for _ in 0..<5 {
            _ = machine.reconnectDue(now: start + .seconds(10))
            _ = machine.connectFailed(Self.refused, now: start, jitter: 1)
        }
        guard case .reconnecting(_, let at) = machine.phase else { Issue.record("expected reconnecting"); return }
        #expect(at == start + .seconds(1), "the backoff is capped")

        _ = machine.reconnectDue(now: start + .seconds(10))
        _ = machine.connectSucceeded(now: start + .seconds(10))
        #expect(machine.status.state == .connected && machine.status.failedAttempts == 0 && machine.status.reconnects == 0)
        failure = machine.connectionLost(Self.lost, now: start, jitter: 1)
        let afterSuccess = try #require(Self.reconnect(failure))
        #expect(afterSuccess.delay == .milliseconds(100), "the backoff starts over after a success")
        _ = machine.reconnectDue(now: start + .seconds(20))
        _ = machine.connectSucceeded(now: start + .seconds(20))
        #expect(machine.status.reconnects == 1)
    }

    @Test("every failure moves to the next endpoint, round robin; the backoff grows once per full cycle")
    func endpointRotation() throws {
        var machine = Self.machine(endpoints: 3)
        let now = ContinuousClock.now
        let first = machine.start()
        #expect(first?.endpoint == 0)
        #expect(machine.status.endpoint == "node0:5672")
        var visited: [Int] = []
        var delays: [Duration] = []
        for _ in 0..<7 {
            let failure = machine.connectFailed(Self.refused, now: now, jitter: 1)
            let next = try #require(Self.reconnect(failure))
            delays.append(next.delay)
            let connect = machine.reconnectDue(now: now + .seconds(5))
            visited.append(try #require(connect).endpoint)
        }
        #expect(visited == [1, 2, 0, 1, 2, 0, 1])
        #expect(delays == [100, 100, 100, 200, 200, 200, 400].map { Duration.milliseconds($0) })
        #expect(machine.status.endpoint == "node1:5672")

        // Connected to node1; losing it moves on to node2, not back to the first.
        _ = machine.connectSucceeded(now: now)
        #expect(machine.phase == .connected(endpoint: 1))
        let loss = machine.connectionLost(Self.lost, now: now, jitter: 1)
        let afterLoss = try #require(Self.reconnect(loss))
        #expect(afterLoss.endpoint == 2 && afterLoss.delay == .milliseconds(100))
    }

    @Test("a first connect that cannot succeed gives up (on every endpoint): waiters and consumers get the error")
    func permanentFailure() throws {
        var machine = Self.machine()
        let now = ContinuousClock.now
        _ = machine.start()
        #expect(machine.waitForConnection(id: 1, "w1") == nil)
        let plan = try machine.planConsumer(queue: "jobs", prefetch: 5, consumerTag: nil, connectionName: "c").get()
        #expect(!plan.startNow)
        machine.addConsumer(plan.spec, consumer: "consumer", active: false)

        let refused = QueueError.loginRefused(user: "u", virtualHost: "/", reason: "403 ACCESS_REFUSED")
        let failure = machine.connectFailed(refused, now: now, jitter: 1)
        let finish = try #require(Self.finish(failure))
        #expect(finish.error == refused && finish.connectWaiters == ["w1"] && finish.consumers == ["consumer"])
        #expect(failure.refusal == refused)
        #expect(machine.status.state == .failed && machine.isFinished)
        let late = machine.waitForConnection(id: 2, "w2")
        #expect(late?.failure == refused)
        #expect(machine.refusal == refused)

        // With several endpoints, it gives up only once every one has refused for good.
        var cluster = Self.machine(endpoints: 2)
        _ = cluster.start()
        var attempt = cluster.connectFailed(refused, now: now, jitter: 0)
        #expect(Self.reconnect(attempt)?.endpoint == 1, "node1 may accept what node0 refused")
        _ = cluster.reconnectDue(now: now)
        attempt = cluster.connectFailed(Self.refused, now: now, jitter: 0)
        #expect(Self.reconnect(attempt)?.endpoint == 0, "node1 is only down: keep trying")
        _ = cluster.reconnectDue(now: now)
        attempt = cluster.connectFailed(refused, now: now, jitter: 0)
        #expect(Self.reconnect(attempt) != nil)
        _ = cluster.reconnectDue(now: now)
        attempt = cluster.connectFailed(refused, now: now, jitter: 0)
        #expect(Self.finish(attempt)?.error == refused, "both refuse the credentials: give up")
        #expect(cluster.status.state == .failed)

        // Once connected, even a non-retryable failure is retried: it may be passing.
        var connected = Self.connected(now: now)
        let closedByBroker = connected.connectionLost(.connectionClosedByBroker(replyCode: 530, replyText: "NOT_ALLOWED"), now: now, jitter: 1)
        #expect(Self.reconnect(closedByBroker) != nil)
    }

    @Test("waiters for the connection: answered on connect, failed on close, expired one by one")
    func connectWaiters() throws {
        var machine = Self.machine()
        let now = ContinuousClock.now
        _ = machine.start()
        #expect(machine.waitForConnection(id: 1, "w1") == nil)
        #expect(machine.waitForConnection(id: 2, "w2") == nil)
        #expect(machine.connectWaiterExpired(id: 1) == "w1")
        #expect(machine.connectWaiterExpired(id: 1) == nil)
        #expect(machine.connectSucceeded(now: now) == ["w2"])
        let connected = machine.waitForConnection(id: 3, "w3")
        #expect(connected?.succeeded == true)

        var closing = Self.machine()
        _ = closing.start()
        _ = closing.connectFailed(Self.refused, now: now, jitter: 1)
        #expect(closing.waitForConnection(id: 1, "a") == nil)
        #expect(closing.waitForConnection(id: 2, "b") == nil)
        guard case .finish(let finish) = closing.close(now: now, gracePeriod: .seconds(5)) else {
            Issue.record("closing while disconnected finishes at once"); return
        }
        #expect(finish.error == nil && finish.connectWaiters == ["a", "b"])
        #expect(closing.status.state == .closed)
        let afterClose = closing.waitForConnection(id: 3, "c")
        #expect(afterClose?.failure == .closed)
    }

    @Test("consumers registered while down start on connect, and resume in order after every reconnect")
    func consumersResumed() throws {
        var machine = Self.machine(endpoints: 2)
        let now = ContinuousClock.now
        for (queue, name) in [("jobs", "c1"), ("events", "c2")] {
            let plan = try machine.planConsumer(queue: queue, prefetch: 10, consumerTag: nil, connectionName: "w").get()
            machine.addConsumer(plan.spec, consumer: name, active: plan.startNow)
        }
        let expected = [Machine.ConsumerSpec(id: 1, queue: "jobs", tag: "w.jobs.1", prefetch: 10),
                        Machine.ConsumerSpec(id: 2, queue: "events", tag: "w.events.2", prefetch: 10)]
        let connect = machine.start()
        #expect(connect?.consumers == expected)
        _ = machine.connectSucceeded(now: now)
        #expect(machine.consumers.values.allSatisfy { $0.active })
        #expect(machine.consumer(tag: "w.events.2")?.consumer == "c2")

        let third = try machine.planConsumer(queue: "dead", prefetch: 1, consumerTag: "mine", connectionName: "w").get()
        #expect(third.startNow, "connected: consume now")
        machine.addConsumer(third.spec, consumer: "c3", active: true)
        let duplicateTag = machine.planConsumer(queue: "x", prefetch: 1, consumerTag: "mine", connectionName: "w")
        #expect(duplicateTag.failure == .invalidConfiguration("consumer tag \"mine\" is already in use"))
        let unlimited = machine.planConsumer(queue: "x", prefetch: 0, consumerTag: nil, connectionName: "w")
        #expect(unlimited.failure != nil)

        _ = machine.connectionLost(Self.lost, now: now, jitter: 0)
        #expect(machine.consumers.values.allSatisfy { !$0.active })
        let resumed = machine.reconnectDue(now: now)
        let resume = try #require(resumed)
        #expect(resume.endpoint == 1)
        #expect(resume.consumers.map(\.tag) == ["w.jobs.1", "w.events.2", "mine"])

        // The events queue was deleted meanwhile: that consumer ends, the others resume next time.
        let gone = QueueError.channelClosedByBroker(replyCode: 404, replyText: "NOT_FOUND - no queue 'events'")
        let failure = machine.connectFailed(gone, consumerGone: 2, now: now, jitter: 0)
        #expect(failure.removedConsumer == "c2")
        #expect(Self.reconnect(failure) != nil, "having connected before, it keeps trying")
        let next = machine.reconnectDue(now: now)
        #expect(next?.consumers.map(\.tag) == ["w.jobs.1", "mine"])
        _ = machine.connectSucceeded(now: now)
        let removed = machine.removeConsumer(1)
        #expect(removed == "c1")
        let cancelled = machine.consumerCancelledByBroker(tag: "mine")
        #expect(cancelled?.consumer == "c3")
        #expect(machine.consumers.isEmpty)
    }

    @Test("confirms reach the publish they belong to; a lost channel fails the rest as unknown")
    func confirmRouting() throws {
        let now = ContinuousClock.now
        var machine = Self.connected(now: now)
        for (waiter, key) in [("p1", "job"), ("p2", "nowhere"), ("p3", "job"), ("p4", "job"), ("p5", "job")] {
            machine.published(exchange: "jobs", routingKey: key, messageID: waiter, waiter: waiter, now: now)
        }
        let matched = machine.returned(exchange: "jobs", routingKey: "nowhere", messageID: "p2", code: 312, text: "NO_ROUTE")
        #expect(matched)
        let first = machine.confirmReceived(tag: 3, multiple: true, positive: true)
        #expect(first.map(\.waiter) == ["p1", "p2", "p3"])
        #expect(first[0].result.succeeded && first[2].result.succeeded)
        #expect(first[1].result.failure == (.unroutable(exchange: "jobs", routingKey: "nowhere", replyCode: 312, replyText: "NO_ROUTE")))
        let nacked = machine.confirmReceived(tag: 5, multiple: false, positive: false)
        #expect(nacked.map(\.waiter) == ["p5"])
        #expect(nacked[0].result.failure == .rejectedByBroker(exchange: "jobs", routingKey: "job"))

        machine.blocked("low on memory")
        #expect(machine.publishRefusal == .brokerBlocked(reason: "low on memory"))
        #expect(machine.status.blockedReason == "low on memory" && !machine.status.isHealthy)
        machine.blocked(nil)
        #expect(machine.publishRefusal == nil)

        let failure = machine.connectionLost(Self.lost, now: now, jitter: 0)
        #expect(failure.confirms.map(\.waiter) == ["p4"])
        #expect(failure.confirms[0].result.failure == .confirmationUnknown(reason: Self.lost.description))
        #expect(failure.refusal == .notConnected(lastError: Self.lost.description))
        // The next channel numbers its publishes from 1 again.
        _ = machine.reconnectDue(now: now)
        _ = machine.connectSucceeded(now: now)
        machine.published(exchange: "jobs", routingKey: "job", messageID: nil, waiter: "q1", now: now)
        let renumbered = machine.confirmReceived(tag: 1, multiple: false, positive: true)
        #expect(renumbered.map(\.waiter) == ["q1"])
    }

    @Test("close while connected: consumers stop, confirms get the grace period, then everyone is answered")
    func gracefulClose() throws {
        let now = ContinuousClock.now
        var machine = Self.connected(now: now)
        let plan = try machine.planConsumer(queue: "jobs", prefetch: 1, consumerTag: nil, connectionName: "w").get()
        machine.addConsumer(plan.spec, consumer: "c1", active: true)
        machine.published(exchange: "jobs", routingKey: "job", messageID: nil, waiter: "p1", now: now)
        machine.published(exchange: "jobs", routingKey: "job", messageID: nil, waiter: "p2", now: now)

        guard case .drain(let consumers) = machine.close(now: now, gracePeriod: .seconds(5)) else {
            Issue.record("connected: drain first"); return
        }
        #expect(consumers == [1])
        guard case .none = machine.close(now: now, gracePeriod: .seconds(5)) else { Issue.record("closing twice"); return }
        #expect(machine.refusal == .closed, "no new consumers or requests while closing")
        let whileClosing = machine.waitForConnection(id: 1, "w")
        #expect(whileClosing?.succeeded == true, "still connected while closing")
        #expect(!machine.closeDue(now: now))
        _ = machine.confirmReceived(tag: 1, multiple: false, positive: true)
        #expect(!machine.closeDue(now: now + .seconds(1)), "one confirm is still due")
        #expect(machine.closeDue(now: now + .seconds(5)), "the grace period is over")
        let finish = machine.closeCompleted()
        #expect(finish.error == nil)
        #expect(finish.confirms.map(\.waiter) == ["p2"])
        #expect(finish.consumers == ["c1"], "not removed by the drain in this test: ended now")
        #expect(machine.status.state == .closed && machine.isFinished)

        // The connection dying while closing ends it too, without reconnecting.
        var dying = Self.connected(now: now)
        dying.published(exchange: "jobs", routingKey: "job", messageID: nil, waiter: "p", now: now)
        _ = dying.close(now: now, gracePeriod: .seconds(5))
        let failure = dying.connectionLost(Self.lost, now: now, jitter: 1)
        #expect(Self.finish(failure)?.error == nil)
        #expect(failure.confirms.map(\.waiter) == ["p"])
        #expect(dying.status.state == .closed)
    }

    @Test("shutdown during the reconnect backoff: finished at once, no further attempt")
    func shutdownDuringReconnect() throws {
        let now = ContinuousClock.now
        var machine = Self.connected(endpoints: 2, now: now)
        let plan = try machine.planConsumer(queue: "jobs", prefetch: 1, consumerTag: nil, connectionName: "w").get()
        machine.addConsumer(plan.spec, consumer: "c1", active: true)
        _ = machine.connectionLost(Self.lost, now: now, jitter: 1)
        #expect(machine.waitForConnection(id: 1, "w1") == nil)

        guard case .finish(let finish) = machine.close(now: now, gracePeriod: .seconds(5)) else {
            Issue.record("not connected: finish at once"); return
        }
        #expect(finish.error == nil && finish.connectWaiters == ["w1"] && finish.consumers == ["c1"])
        let noReconnect = machine.reconnectDue(now: now + .seconds(60))
        #expect(noReconnect == nil)
        let noStart = machine.start()
        #expect(noStart == nil)
        #expect(machine.status.state == .closed)
        let refusedConsumer = machine.planConsumer(queue: "jobs", prefetch: 1, consumerTag: nil, connectionName: "w")
        #expect(refusedConsumer.failure == .closed)
    }
}

extension Result {
    /// The error, or nil on success: `Result<Void, _>` is not Equatable.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }

    fileprivate var succeeded: Bool { failure == nil }
}
