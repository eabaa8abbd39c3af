import PushDelivery
import PushRuntime
import PushTestSupport
import Synchronization
import Testing

/// The nghttp2 engine's loop thread as a task executor (`HTTP2Client.loopExecutor`): a task
/// that prefers it runs on that thread, whether it was queued before the thread started or
/// while it runs; one that arrives after the thread stopped, or at a loop that never ran,
/// runs on the global executor instead of waiting forever.
@Suite("HTTP/2 loop as a task executor")
struct LoopExecutorTests {
    static func client(named name: String) throws -> HTTP2Client {
        try HTTP2Client(configuration: .init(threadName: name))
    }

    @Test("a task preferring the loop runs on the loop's thread, also when queued before the thread started")
    func runsOnTheLoopThread() async throws {
        let client = try Self.client(named: "pushd-h2-exec1")
        let executor = try #require(client.loopExecutor)
        // Made (and so queued) before the thread exists.
        let early = Task(executorPreference: executor) { ThreadName.current }
        client.start()
        #expect(await early.value == "pushd-h2-exec1")
        // Work that suspends and resumes comes back to the same thread.
        let names = await Task(executorPreference: executor) { () -> [String?] in
            var names: [String?] = []
            for _ in 0..<3 {
                names.append(ThreadName.current)
                await Task.yield()
            }
            return names
        }.value
        #expect(names == Array(repeating: "pushd-h2-exec1", count: 3))
        await client.shutdown()
    }

    @Test("after the loop stopped, or when it never started, its tasks run elsewhere")
    func outlivesTheLoop() async throws {
        let stopped = try Self.client(named: "pushd-h2-exec2")
        stopped.start()
        let executor = try #require(stopped.loopExecutor)
        #expect(await Task(executorPreference: executor) { ThreadName.current }.value == "pushd-h2-exec2")
        await stopped.shutdown()
        let afterStop = await Task(executorPreference: executor) { ThreadName.current }.value
        #expect(afterStop != "pushd-h2-exec2")

        let never = try Self.client(named: "pushd-h2-exec3")
        let idle = try #require(never.loopExecutor)
        let queued = Task(executorPreference: idle) { ThreadName.current }
        await never.shutdown()
        #expect(await queued.value != "pushd-h2-exec3")
    }

    /// Many tasks' slices queued at once (a few dozen batches' sealing tasks) must not hold
    /// the loop's connections until all have run: a pass runs jobs for a budget, then reads
    /// and sends. Here 30 jobs of 2 ms each are queued before the thread starts, so its first
    /// pass finds them all; the first submits a request to a closed port, whose failure the
    /// loop can only see by polling. Run back to back, every job would finish first.
    @Test("a pass runs queued tasks for a budget, then reads and sends before it runs the rest")
    func tasksLeaveRoomForIO() async throws {
        let client = try Self.client(named: "pushd-h2-exec4")
        let executor = try #require(client.loopExecutor)
        let jobsRun = Atomic<Int>(0)
        let closedPort = try FreePort.find()
        let group = RequestGroup()
        let busyJob: @Sendable () -> Void = {
            let until = ContinuousClock.now + .milliseconds(2)
            while ContinuousClock.now < until {}
            jobsRun.add(1, ordering: .sequentiallyConsistent)
        }
        let (answered, answer) = AsyncStream.makeStream(of: (Int, Result<HTTPResponse, HTTPClientError>).self)
        var tasks = [
            Task(executorPreference: executor) {
                let request = HTTPRequest(method: .get, url: "https://127.0.0.1:\(closedPort)/", timeout: .seconds(10))
                await client.submit(request, group: group) { result in
                    answer.yield((jobsRun.load(ordering: .sequentiallyConsistent), result))
                    answer.finish()
                }
                busyJob()
            }
        ]
        for _ in 1..<30 { tasks.append(Task(executorPreference: executor) { busyJob() }) }
        client.start()
        for task in tasks { await task.value }
        var answers = answered.makeAsyncIterator()
        let (runBefore, result) = try #require(await answers.next())
        await client.shutdown()
        guard case .failure(.connectionFailed) = result else {
            Issue.record("closed port: expected connectionFailed, got \(result)")
            return
        }
        #expect(runBefore < tasks.count, "the request failed after \(runBefore) of \(tasks.count) jobs had run")
    }

    @Test("the libcurl engine offers no loop executor")
    func curlHasNone() throws {
        let client = try HTTP2Client(configuration: .init(engine: .libcurl))
        #expect(client.loopExecutor == nil)
    }
}
