@testable import PushDelivery
import Synchronization
import Testing

@Suite("First-success gate")
struct FirstSuccessGateTests {
    /// An atomic counter the concurrent bodies share.
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Resumes its callers together once `parties` have arrived; `false` for every caller if
    /// that has not happened within `limit` (so a regression fails instead of hanging).
    actor Barrier {
        private let parties: Int
        private var waiting: [CheckedContinuation<Bool, Never>] = []
        private var released = false
        private var timedOut = false

        init(parties: Int) { self.parties = parties }

        func arrive(limit: Duration = .seconds(10)) async -> Bool {
            if released { return true }
            if timedOut { return false }
            if waiting.count + 1 == parties {
                release(true)
                return true
            }
            if waiting.isEmpty {
                Task { [weak self] in
                    try? await Task.sleep(for: limit)
                    await self?.release(false)
                }
            }
            return await withCheckedContinuation { waiting.append($0) }
        }

        private func release(_ passed: Bool) {
            guard !released, !timedOut else { return }
            released = passed
            timedOut = !passed
            for continuation in waiting { continuation.resume(returning: passed) }
            waiting.removeAll()
        }
    }

    @Test("once the first request succeeds, those queued behind it go together, not one at a time")
    func queuedRequestsGoTogether() async {
        let gate = FirstSuccessGate()
        let others = 20
        let barrier = Barrier(parties: others)
        let entered = Counter()
        let calling = Counter()
        let delivered = Attempt(outcome: .delivered(id: nil), connectionLost: false)
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0...others {
                group.addTask {
                    calling.value.add(1, ordering: .relaxed)
                    let attempt = await gate.run {
                        // The first through the gate lets the others queue behind it, then
                        // succeeds and opens it. Every other waits in its request until all
                        // of them are in flight together, which a gate that lets its queue
                        // through one by one never allows.
                        if entered.value.add(1, ordering: .relaxed).newValue == 1 {
                            while calling.value.load(ordering: .relaxed) <= others { await Task.yield() }
                            for _ in 0..<100 { await Task.yield() }
                            return delivered
                        }
                        return await barrier.arrive()
                            ? delivered : Attempt(outcome: .retryLater(reason: "serialised", retryAfter: nil), connectionLost: false)
                    }
                    return attempt.outcome == .delivered(id: nil)
                }
            }
            var all: [Bool] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes.count == others + 1)
        #expect(outcomes.allSatisfy { $0 }, "\(outcomes.filter { !$0 }.count) requests went one at a time")
    }

    @Test("until one succeeds, only one request is in flight")
    func oneAtATimeUntilSuccess() async {
        let gate = FirstSuccessGate()
        let inFlight = Counter()
        let most = Counter()
        let failed = Attempt(outcome: .retryLater(reason: "auth", retryAfter: nil), connectionLost: false)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    _ = await gate.run {
                        let now = inFlight.value.add(1, ordering: .relaxed).newValue
                        most.value.max(now, ordering: .relaxed)
                        await Task.yield()
                        inFlight.value.subtract(1, ordering: .relaxed)
                        return failed
                    }
                }
            }
        }
        #expect(most.value.load(ordering: .relaxed) == 1)
    }
}
