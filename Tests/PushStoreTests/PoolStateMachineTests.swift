@testable import PushStore
import Testing

@Suite("Pool state machine (no database)")
struct PoolStateMachineTests {
    typealias Machine = PoolStateMachine<String, String>

    @Test("opens connections up to the limit, then queues callers; a release goes to the first waiter")
    func boundedAndFIFO() {
        var machine = Machine(maximumConnections: 2)
        guard case .wait(startConnecting: true) = machine.lease(id: 1, waiter: "w1"),
              case .wait(startConnecting: true) = machine.lease(id: 2, waiter: "w2"),
              case .wait(startConnecting: false) = machine.lease(id: 3, waiter: "w3")
        else { Issue.record("expected two connects then a plain wait"); return }
        #expect(machine.connecting == 2)
        guard case .handOver("c1", to: "w1") = machine.connected("c1"),
              case .handOver("c2", to: "w2") = machine.connected("c2")
        else { Issue.record("new connections go to waiters in order"); return }
        guard case .handOver("c1", to: "w3") = machine.release("c1", reusable: true) else {
            Issue.record("a released connection goes to the waiting caller"); return
        }
        guard case .none = machine.release("c2", reusable: true) else { Issue.record("nobody waits: idle"); return }
        guard case .use("c2") = machine.lease(id: 4, waiter: "w4") else { Issue.record("idle connections are reused"); return }
        #expect(machine.leased == 2)
        #expect(machine.idle.isEmpty)
    }

    @Test("growing after waiting: the first connection at once, another only for a caller still waiting, one at a time")
    func growsAfterWaiting() {
        var machine = Machine(maximumConnections: 3, growsAfterWaiting: true)
        guard case .wait(startConnecting: true) = machine.lease(id: 1, waiter: "w1"),
              case .wait(startConnecting: false) = machine.lease(id: 2, waiter: "w2"),
              case .wait(startConnecting: false) = machine.lease(id: 3, waiter: "w3")
        else { Issue.record("expected one connect, then plain waits"); return }
        // w2 waited the delay while the first connection is still being opened: overdue, but
        // one at a time.
        let opensWhileFirstOpening = machine.growIfStillWaiting(id: 2)
        #expect(!opensWhileFirstOpening)
        #expect(machine.connecting == 1)
        guard case .handOver("c1", to: "w1") = machine.connected("c1") else { Issue.record("first to w1"); return }
        let opensForOverdueW2 = machine.growForOverdueWaiters()
        #expect(opensForOverdueW2, "the overdue w2 gets the next connection")
        #expect(machine.connecting == 1)
        let opensSecondAtOnce = machine.growIfStillWaiting(id: 3)
        #expect(!opensSecondAtOnce, "still one at a time")
        guard case .handOver("c2", to: "w2") = machine.connected("c2") else { Issue.record("second to w2"); return }
        let opensForOverdueW3 = machine.growForOverdueWaiters()
        #expect(opensForOverdueW3, "w3 became overdue meanwhile")
        guard case .handOver("c3", to: "w3") = machine.connected("c3") else { Issue.record("third to w3"); return }
        let opensWithNobodyWaiting = machine.growForOverdueWaiters()
        #expect(!opensWithNobodyWaiting, "nobody waits")
        // At the limit nothing grows; a served caller's check is a no-op.
        guard case .wait(startConnecting: false) = machine.lease(id: 4, waiter: "w4") else { Issue.record("w4 waits"); return }
        let opensAtTheLimit = machine.growIfStillWaiting(id: 4)
        #expect(!opensAtTheLimit)
        let opensForServedCaller = machine.growIfStillWaiting(id: 1)
        #expect(!opensForServedCaller)
        guard case .handOver("c1", to: "w4") = machine.release("c1", reusable: true) else { Issue.record("c1 to w4"); return }
        #expect(machine.connecting == 0)
    }

    @Test("growing after waiting: a caller overdue while the first connection keeps failing gets the next one once it opens")
    func overdueWhileRetrying() {
        var machine = Machine(maximumConnections: 2, growsAfterWaiting: true)
        _ = machine.lease(id: 1, waiter: "w1")
        _ = machine.lease(id: 2, waiter: "w2")
        let retries = machine.connectFailed("connection refused")
        #expect(retries, "callers wait: the attempt goes on")
        let opensWhileRetrying = machine.growIfStillWaiting(id: 2)
        #expect(!opensWhileRetrying, "one at a time, even while the first keeps failing")
        guard case .handOver("c1", to: "w1") = machine.connected("c1") else { Issue.record("c1 to w1"); return }
        let opensForOverdue = machine.growForOverdueWaiters()
        #expect(opensForOverdue)
        guard case .handOver("c2", to: "w2") = machine.connected("c2") else { Issue.record("c2 to w2"); return }
    }

    @Test("growing after waiting: a caller served before its delay opens nothing, and a pool with a free connection never waits")
    func servedBeforeTheDelay() {
        var machine = Machine(maximumConnections: 4, growsAfterWaiting: true)
        _ = machine.lease(id: 1, waiter: "w1")
        _ = machine.connected("c1")
        guard case .wait(startConnecting: false) = machine.lease(id: 2, waiter: "w2") else { Issue.record("w2 waits for c1"); return }
        guard case .handOver("c1", to: "w2") = machine.release("c1", reusable: true) else { Issue.record("c1 to w2"); return }
        let opensForServedW2 = machine.growIfStillWaiting(id: 2)
        #expect(!opensForServedW2)
        #expect(machine.connecting == 0)
        _ = machine.release("c1", reusable: true)
        guard case .use("c1") = machine.lease(id: 3, waiter: "w3") else { Issue.record("the idle one"); return }
        // A broken connection with callers waiting and nothing else open is replaced at once.
        guard case .wait(startConnecting: false) = machine.lease(id: 4, waiter: "w4"),
              case .close("c1", startConnecting: true) = machine.release("c1", reusable: false)
        else { Issue.record("the only connection broke: replace it now"); return }
        _ = machine.shutdown()
        let opensWhileShuttingDown = machine.growForOverdueWaiters()
        #expect(!opensWhileShuttingDown, "a pool shutting down does not grow")
    }

    @Test("a broken connection is closed and replaced when callers wait")
    func brokenReplaced() {
        var machine = Machine(maximumConnections: 1)
        _ = machine.lease(id: 1, waiter: "w1")
        _ = machine.connected("c1")
        guard case .wait(startConnecting: false) = machine.lease(id: 2, waiter: "w2") else {
            Issue.record("at the limit, the second caller waits"); return
        }
        guard case .close("c1", startConnecting: true) = machine.release("c1", reusable: false) else {
            Issue.record("broken: close it and open a replacement for the waiter"); return
        }
        #expect(machine.connecting == 1)
        #expect(machine.closing == 1)
        machine.closed()
        guard case .handOver("c2", to: "w2") = machine.connected("c2") else { Issue.record("replacement to waiter"); return }
    }

    @Test("failed connection attempts are retried only while someone waits, and the reason is kept")
    func connectRetries() {
        var machine = Machine(maximumConnections: 3)
        _ = machine.lease(id: 1, waiter: "w1")
        let retryWhileWaiting = machine.connectFailed("connection refused")
        #expect(retryWhileWaiting)
        #expect(machine.lastConnectError == "connection refused")
        let removed = machine.removeWaiter(id: 1)
        let removedAgain = machine.removeWaiter(id: 1)
        #expect(removed == "w1")
        #expect(removedAgain == nil)
        let retryWithNobodyWaiting = machine.connectFailed("connection refused")
        #expect(!retryWithNobodyWaiting)
        #expect(machine.connecting == 0)
        _ = machine.lease(id: 2, waiter: "w2")
        guard case .handOver = machine.connected("c1") else { Issue.record("expected a handover"); return }
        #expect(machine.lastConnectError == nil)
    }

    @Test("shutdown fails waiters, closes idle connections now and leased ones when returned")
    func shutdown() {
        var machine = Machine(maximumConnections: 2)
        _ = machine.lease(id: 1, waiter: "w1")
        _ = machine.lease(id: 2, waiter: "w2")
        _ = machine.connected("c1")
        _ = machine.connected("c2")
        _ = machine.release("c2", reusable: true)
        _ = machine.lease(id: 3, waiter: "w3")  // gets c2 back
        _ = machine.release("c2", reusable: true)
        let (close, fail) = machine.shutdown()
        #expect(close == ["c2"])
        #expect(fail.isEmpty)
        #expect(!machine.isShutdownComplete)
        guard case .fail(.poolClosed) = machine.lease(id: 4, waiter: "w4") else { Issue.record("closed pool refuses"); return }
        machine.closed()
        guard case .close("c1", startConnecting: false) = machine.release("c1", reusable: true) else {
            Issue.record("leased connection closed on return"); return
        }
        #expect(!machine.isShutdownComplete)
        machine.closed()
        #expect(machine.isShutdownComplete)
    }
}
