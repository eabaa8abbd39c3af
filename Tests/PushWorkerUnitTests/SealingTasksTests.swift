@testable import PushWorker
import Testing

/// Which tasks seal a batch: one per loop queue on its loop, the pool for the rest, and pool
/// helpers when a batch reaches fewer loops than it may seal on at once.
@Suite("A batch's sealing tasks")
struct SealingTasksTests {
    typealias Task = JobProcessor.SealingTask

    @Test("both platforms on two cores: one task per loop, no helper (the usual worker)")
    func bothPlatforms() {
        let tasks = JobProcessor.sealingTasks(queueSizes: [50, 50], onLoop: [true, true], encryptions: 2)
        #expect(tasks == [Task(queue: 0, onLoop: true), Task(queue: 1, onLoop: true)])
    }

    @Test("one platform: its loop and a pool task share its queue, so both cores seal")
    func onePlatform() {
        let tasks = JobProcessor.sealingTasks(queueSizes: [100], onLoop: [true], encryptions: 2)
        #expect(tasks == [Task(queue: 0, onLoop: true), Task(queue: 0, onLoop: false)])
        // More cores: more helpers, the largest loop queue first.
        let wide = JobProcessor.sealingTasks(queueSizes: [20, 300], onLoop: [true, true], encryptions: 5)
        #expect(wide.filter { !$0.onLoop }.map(\.queue) == [1, 0, 1])
    }

    @Test("a queue too short to share is left to its loop; no queue gets more tasks than devices")
    func shortQueues() {
        #expect(JobProcessor.sealingTasks(queueSizes: [15], onLoop: [true], encryptions: 2) == [Task(queue: 0, onLoop: true)])
        let many = JobProcessor.sealingTasks(queueSizes: [16], onLoop: [true], encryptions: 64)
        #expect(many.count == 16)
    }

    @Test("devices for the pool (no loop, or a key to check in full): up to `encryptions` pool tasks")
    func poolQueue() {
        // Pool mode: one queue without a loop.
        #expect(JobProcessor.sealingTasks(queueSizes: [3], onLoop: [false], encryptions: 8).count == 3)
        #expect(JobProcessor.sealingTasks(queueSizes: [100], onLoop: [false], encryptions: 2) == [Task(queue: 0, onLoop: false), Task(queue: 0, onLoop: false)])
        // Loops and a pool queue of unchecked keys: the loop's helper is counted apart.
        let mixed = JobProcessor.sealingTasks(queueSizes: [100, 2], onLoop: [true, false], encryptions: 2)
        #expect(mixed == [Task(queue: 0, onLoop: true), Task(queue: 1, onLoop: false), Task(queue: 1, onLoop: false), Task(queue: 0, onLoop: false)])
        #expect(JobProcessor.sealingTasks(queueSizes: [0, 5], onLoop: [true, false], encryptions: 2).allSatisfy { $0.queue == 1 })
    }
}
