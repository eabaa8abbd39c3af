@testable import PushQueue
import Testing

/// The publisher-confirm state machine, without a broker.
@Suite("Publisher confirm bookkeeping")
struct ConfirmTrackerTests {
    private func tracker(_ count: Int, timeout: Duration = .seconds(60), now: ContinuousClock.Instant = .now) -> ConfirmTracker<Int> {
        var tracker = ConfirmTracker<Int>(timeout: timeout)
        for index in 1...count {
            tracker.register(exchange: "x", routingKey: "k\(index % 2)", messageID: "m\(index)", waiter: index, now: now)
        }
        return tracker
    }

    @Test("a multiple ack confirms everything up to its tag, and nothing twice")
    func multipleAck() {
        var confirms = tracker(5)
        let first = confirms.confirm(tag: 3, multiple: true, positive: true)
        #expect(first.map(\.waiter) == [1, 2, 3])
        #expect(first.allSatisfy { (try? $0.result.get()) != nil })
        let again = confirms.confirm(tag: 3, multiple: true, positive: true)
        #expect(again.isEmpty)
        let single = confirms.confirm(tag: 5, multiple: false, positive: true)
        #expect(single.map(\.waiter) == [5])
        let rest = confirms.confirm(tag: 5, multiple: true, positive: true)
        #expect(rest.map(\.waiter) == [4])
        #expect(confirms.isEmpty)
    }

    @Test("a nack fails with rejectedByBroker naming the exchange and routing key")
    func nack() {
        var confirms = tracker(2)
        let resolved = confirms.confirm(tag: 2, multiple: false, positive: false)
        #expect(resolved.count == 1)
        guard case .failure(.rejectedByBroker("x", "k0")) = resolved[0].result else {
            Issue.record("expected rejectedByBroker, got \(resolved[0].result)")
            return
        }
    }

    @Test("a return is attributed to the oldest matching publish and turns its ack into unroutable")
    func returnAttribution() {
        var confirms = tracker(4)
        let matched = confirms.markReturned(exchange: "x", routingKey: "k1", messageID: "m3", code: 312, text: "NO_ROUTE")
        let unmatched = confirms.markReturned(exchange: "x", routingKey: "k1", messageID: "nope", code: 312, text: "NO_ROUTE")
        #expect(matched)
        #expect(!unmatched)
        let resolved = confirms.confirm(tag: 4, multiple: true, positive: true)
        let failures = resolved.filter { if case .failure = $0.result { true } else { false } }
        #expect(failures.map(\.waiter) == [3])
        if case .failure(.unroutable(let exchange, let key, let code, let text)) = failures.first?.result {
            #expect(exchange == "x" && key == "k1" && code == 312 && text == "NO_ROUTE")
        } else {
            Issue.record("expected unroutable")
        }
    }

    @Test("overdue confirms fail once; the late ack is then ignored")
    func expiry() {
        let start = ContinuousClock.now
        var confirms = tracker(3, timeout: .seconds(1), now: start)
        let early = confirms.expire(now: start + .milliseconds(999))
        #expect(early.isEmpty)
        let expired = confirms.expire(now: start + .seconds(1))
        #expect(expired.map(\.waiter) == [1, 2, 3])
        #expect(expired.allSatisfy { if case .failure(.confirmTimedOut) = $0.result { true } else { false } })
        #expect(confirms.waitingCount == 0)
        let later = confirms.expire(now: start + .seconds(5))
        #expect(later.isEmpty)
        let lateAck = confirms.confirm(tag: 3, multiple: true, positive: true)
        #expect(lateAck.isEmpty)
        #expect(confirms.isEmpty)
    }

    @Test("a dead channel fails every waiter and numbering restarts at 1")
    func failAll() {
        var confirms = tracker(3)
        _ = confirms.confirm(tag: 1, multiple: false, positive: true)
        let failed = confirms.failAll(.confirmationUnknown(reason: "socket closed"))
        #expect(failed.map(\.waiter) == [2, 3])
        #expect(confirms.nextSequence == 1)
        let sequence = confirms.register(exchange: "x", routingKey: "k", messageID: nil, waiter: 9)
        #expect(sequence == 1)
        let confirmed = confirms.confirm(tag: 1, multiple: false, positive: true)
        #expect(confirmed.map(\.waiter) == [9])
    }
}

@Suite("Delivery settlement bookkeeping")
struct DeliveryLedgerTests {
    @Test("a delivery is settled once, and never from an earlier channel")
    func ledger() {
        var ledger = DeliveryLedger()
        let first = ledger.startGeneration()
        ledger.delivered(1)
        ledger.delivered(2)
        let once = ledger.settle(1, generation: first)
        let twice = ledger.settle(1, generation: first)
        ledger.endGeneration()
        let afterDeath = ledger.settle(2, generation: first)
        #expect([once, twice, afterDeath] == [.settled, .alreadySettled, .stale])
        let second = ledger.startGeneration()
        ledger.delivered(2)
        let afterReconnect = [ledger.settle(2, generation: first), ledger.settle(2, generation: second)]
        #expect(afterReconnect == [.stale, .settled])
        #expect(ledger.unsettledCount == 0)
    }
}
