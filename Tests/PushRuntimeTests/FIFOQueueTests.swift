import PushRuntime
import Synchronization
import Testing

@Suite("FIFO queue and the semaphore's waiters")
struct FIFOQueueTests {
    @Test("takes elements in order through thousands of mixed operations, as an array would")
    func behavesAsAnArray() {
        var queue = FIFOQueue<Int>()
        var model: [Int] = []
        var generator = SeededGenerator(seed: 12)
        for step in 0..<20_000 {
            switch generator.next() % 7 {
            case 0, 1, 2:
                queue.append(step)
                model.append(step)
            case 3, 4, 5:
                #expect(queue.removeFirst() == (model.isEmpty ? nil : model.removeFirst()))
            default:
                let divisor = Int(generator.next() % 5) + 2
                let index = model.firstIndex { $0 % divisor == 0 }
                #expect(queue.remove(firstWhere: { $0 % divisor == 0 }) == index.map { model.remove(at: $0) })
            }
            #expect(queue.count == model.count)
            #expect(queue.first == model.first)
            #expect(queue.isEmpty == model.isEmpty)
        }
        var remaining: [Int] = []
        while let next = queue.removeFirst() { remaining.append(next) }
        #expect(remaining == model)
        #expect(queue.isEmpty && queue.removeFirst() == nil)
    }

    private final class FreedCount: Sendable {
        let value = Atomic<Int>(0)
    }

    private final class Tracked {
        let freed: FreedCount
        init(_ freed: FreedCount) { self.freed = freed }
        deinit { freed.value.add(1, ordering: .relaxed) }
    }

    @Test("a taken element is released at once, not when the queue compacts")
    func releasesTakenElements() {
        let freed = FreedCount()
        var queue = FIFOQueue<Tracked>()
        for _ in 0..<10 { queue.append(Tracked(freed)) }
        queue.removeFirst()
        queue.removeFirst()
        #expect(freed.value.load(ordering: .relaxed) == 2)
        _ = queue.remove(firstWhere: { _ in true })
        #expect(freed.value.load(ordering: .relaxed) == 3)
    }

    private final class Order: Sendable {
        let taken = Mutex<[Int]>([])
        func add(_ index: Int) { taken.withLock { $0.append(index) } }
    }

    /// Bounded: a semaphore that lost a waiter would otherwise hang the run.
    @Test("the semaphore wakes its waiters first come, first served; a cancelled one gives up its place", .timeLimit(.minutes(1)))
    func semaphoreOrder() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        try await semaphore.acquire()
        let order = Order()
        var waiters: [Task<Void, Never>] = []
        for index in 0..<6 {
            waiters.append(Task {
                do {
                    try await semaphore.acquire()
                    order.add(index)
                    semaphore.release()
                } catch {
                    order.add(-index)
                }
            })
            // Each waiter is queued before the next starts, so the order is the test's.
            while semaphore.waiting < index + 1 { await Task.yield() }
        }
        waiters[2].cancel()
        while semaphore.waiting > 5 { await Task.yield() }
        semaphore.release()
        for waiter in waiters { await waiter.value }
        let taken = order.taken.withLock { $0 }
        #expect(taken.filter { $0 >= 0 } == [0, 1, 3, 4, 5])
        #expect(taken.contains(-2))
        #expect(semaphore.waiting == 0)
    }
}
