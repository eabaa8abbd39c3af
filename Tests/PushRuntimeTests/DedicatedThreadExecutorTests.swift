import Foundation
import PushRuntime
import Testing

/// An actor pinned to a dedicated thread, as the libpq and rabbitmq-c connections are.
actor ThreadBoundCounter {
    let executor: DedicatedThreadExecutor
    private var value = 0
    private(set) var ranOffThread = 0

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    init(executor: DedicatedThreadExecutor) {
        self.executor = executor
    }

    func increment() -> Int {
        if !executor.isCurrentThread { ranOffThread += 1 }
        value += 1
        return value
    }

    /// The OS name of the thread this runs on.
    func threadName() -> String? { ThreadName.current }

    /// Blocks its thread, as a C call would.
    func block(milliseconds: Int) {
        usleep(UInt32(milliseconds * 1000))
    }
}

@Suite("Dedicated thread executor")
struct DedicatedThreadExecutorTests {
    @Test("an actor on a dedicated executor runs every call on that one thread, serially")
    func confinement() async {
        let executor = DedicatedThreadExecutor(name: "test-confined")
        defer { executor.shutdown() }
        let counter = ThreadBoundCounter(executor: executor)
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<500 { group.addTask { await counter.increment() } }
            let results = await group.reduce(into: [Int]()) { $0.append($1) }
            #expect(Set(results) == Set(1...500))
        }
        #expect(await counter.ranOffThread == 0)
        #expect(!executor.isCurrentThread)
    }

    @Test("a blocking call on the dedicated thread does not stall the cooperative pool")
    func blockingIsIsolated() async {
        let executor = DedicatedThreadExecutor(name: "test-blocking")
        defer { executor.shutdown() }
        let counter = ThreadBoundCounter(executor: executor)
        let blocker = Task { await counter.block(milliseconds: 300) }
        // While the dedicated thread is blocked, pool work still completes.
        let sum = await withTaskGroup(of: Int.self) { group in
            for value in 0..<100 { group.addTask { value } }
            return await group.reduce(0, +)
        }
        #expect(sum == 4950)
        await blocker.value
    }

    @Test("the dedicated thread carries the executor's name for the OS, cut to Linux's 15 bytes")
    func threadIsNamed() async {
        let executor = DedicatedThreadExecutor(name: "pushd-test-named-thread")
        defer { executor.shutdown() }
        let counter = ThreadBoundCounter(executor: executor)
        #expect(await counter.threadName() == "pushd-test-name")
        // Naming that thread renamed no other: this task's own thread keeps its name.
        #expect(ThreadName.current != "pushd-test-name")
    }
}

@Suite("Service group")
struct ServiceGroupTests {
    struct RecordingService: Service {
        let name: String
        let log: LockedLog

        func run(shutdown: ShutdownSignal) async throws {
            log.append("\(name) started")
            await shutdown.wait()
            log.append("\(name) stopped")
        }
    }

    final class LockedLog: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("shutdown stops services in reverse order of start")
    func reverseOrder() async throws {
        let log = LockedLog()
        let group = ServiceGroup(
            services: [RecordingService(name: "a", log: log), RecordingService(name: "b", log: log)],
            logger: Logger(label: "test", minimumLevel: .error))
        let running = Task { try await group.run(handlingSignals: []) }
        while log.all.count < 2 { await Task.yield() }
        group.shutdown()
        try await running.value
        #expect(log.all.suffix(2) == ["b stopped", "a stopped"])
    }
}

import Synchronization
