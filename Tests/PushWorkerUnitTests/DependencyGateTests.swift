@testable import PushWorker
import Testing

@Suite("Dependency gate")
struct DependencyGateTests {
    @Test("the first close reports the transition; waiters for open are released by open, waiters for closed by close")
    func transitions() async {
        let gate = DependencyGate()
        #expect(gate.isOpen)
        await gate.waitUntilOpen()  // open: returns at once
        async let closed: Void = gate.waitUntilClosed()
        #expect(gate.close())
        #expect(!gate.close(), "already closed: no second probe")
        await closed
        async let opened: Void = gate.waitUntilOpen()
        gate.open()
        await opened
        #expect(gate.isOpen)
    }

    @Test("a cancelled wait returns")
    func cancellation() async {
        let gate = DependencyGate()
        _ = gate.close()
        let waiter = Task { await gate.waitUntilOpen() }
        waiter.cancel()
        await waiter.value
        #expect(!gate.isOpen)
    }
}
