import Foundation
import PushRuntime
import Synchronization

/// The thread that owns every connection of a native HTTP/2 engine (nghttp2 over OpenSSL)
/// and drives them with `poll`.
///
/// Other threads hand it requests and cancellations through `inbox` and tell it through a
/// `LoopDoorbell`, which wakes it only when it sleeps soundly. The thread starts with
/// `start()` (what `HTTP2Client.run` calls), not at creation: requests submitted before
/// wait in the inbox. A loop stopped before it ever started fails those requests with
/// `.shutDown` itself.
///
/// Why not libcurl here: with hundreds of streams in flight on a connection, each of
/// libcurl's wake-ups walks every transfer, and each transfer costs an easy handle's set-up
/// and teardown; profiled under a backlog, that was a fifth of a worker's CPU and grew with
/// the number in flight. This loop's work follows the frames that arrive.
final class NativeHTTP2Loop: Sendable {
    struct Configuration: Sendable {
        var core: H2LoopCore.Configuration
        var caFile: String?
        var threadName = "pushd-h2"
    }

    private struct Inbox {
        var requests = LoopInbox<Exchange>()
        /// Answers of background DNS lookups, by connection.
        var resolved: [(connectionID: Int, result: Result<[SocketAddress], HTTPClientError>)] = []
        var cancelledGroups: [RequestGroup] = []
        /// Jobs of tasks that prefer this loop as their executor (`TaskExecutor` below).
        var jobs: [UnownedJob] = []

        /// The jobs queued, moved out.
        mutating func takeJobs() -> [UnownedJob] {
            defer { jobs = [] }
            return jobs
        }
    }

    /// After taking requests the loop sleeps lightly for this long: while they keep coming,
    /// it takes the next ones when a response wakes it, or after a light sleep, instead of
    /// being rung for each. A light sleep that ends with nothing to take ends this early: the
    /// loop then sleeps soundly until it is rung, so a quiet loop wastes one wake-up at most.
    static let busyWindow: Duration = .milliseconds(10)

    private let inbox = Mutex(Inbox())
    private let doorbell: LoopDoorbell
    private let configuration: Configuration
    /// Taken in `init` so that a CA file that cannot be loaded fails at start-up; shared with
    /// the process's other loops of the same CA configuration.
    let tls: TLSClientContext
    private let logger: Logger
    let finished = ShutdownSignal()
    let counters = H2EngineCounters()

    init(configuration: Configuration, logger: Logger) throws(HTTPClientError) {
        self.configuration = configuration
        self.logger = logger
        self.tls = try TLSClientContext.shared(caFile: configuration.caFile)
        self.doorbell = try LoopDoorbell()
    }

    /// Starts the loop thread; later calls, and calls after `stop()`, do nothing.
    func start() {
        guard inbox.withLock({ $0.requests.claimThread() }) else { return }
        ThreadName.startThread(named: configuration.threadName) { [self] in run() }
    }

    /// Hands a request to the loop; false if the loop is stopping. The doorbell rings
    /// outside the inbox lock (a system call there made every submitting task wait for it).
    func submit(_ exchange: Exchange) -> Bool {
        let accepted = inbox.withLock { inbox -> Bool in
            guard !inbox.requests.stopping else { return false }
            inbox.requests.started.append(exchange)
            return true
        }
        if accepted { doorbell.announce() }
        return accepted
    }

    func cancel(_ exchange: Exchange) {
        inbox.withLock { $0.requests.cancelled.append(exchange) }
        doorbell.announceUrgently()
    }

    /// Cancels every request of `group` the loop holds (the group refuses later ones itself).
    func cancel(_ group: RequestGroup) {
        inbox.withLock { $0.cancelledGroups.append(group) }
        doorbell.announceUrgently()
    }

    /// Takes no new requests; the loop exits once those in flight are done.
    func stop() {
        let (waiting, jobs) = inbox.withLock { inbox -> ([Exchange]?, [UnownedJob]) in
            guard let waiting = inbox.requests.stop() else { return (nil, []) }
            return (waiting, inbox.takeJobs())
        }
        guard let waiting else {
            doorbell.announceUrgently()
            return
        }
        for exchange in waiting { exchange.complete(.failure(.shutDown)) }
        for job in jobs { globalConcurrentExecutor.enqueue(job) }
        finished.trigger()
    }

    // MARK: - Loop thread only

    private func run() {
        // A write to a socket the server closed raises SIGPIPE, and OpenSSL's socket BIO
        // cannot pass MSG_NOSIGNAL; blocked on this thread, the write fails with EPIPE
        // instead, without touching the process's signal handling.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)

        let core: H2LoopCore
        do {
            core = H2LoopCore(
                configuration: configuration.core, tls: tls, callbacks: try H2SessionCallbacks(), logger: logger,
                resolveInBackground: { [self] connectionID, host, port in
                    SocketAddress.resolveInBackground(host: host, port: port) { result in
                        self.inbox.withLock { $0.resolved.append((connectionID, result)) }
                        self.doorbell.announceUrgently()
                    }
                },
                counters: counters)
        } catch {
            failEverything(with: error)
            return
        }
        var descriptors: [pollfd] = []
        var owners: [Int] = []
        var stopping = false
        var lastRequestTaken = ContinuousClock.now
        var sleptLightlyUntilTimeout = false
        while true {
            // Every announcer appends under the lock and then announces, and the loop takes
            // the announcement before the inbox, so no entry is missed; a pass with nothing
            // announced skips the lock, which submitting tasks otherwise contend for.
            if doorbell.takeAnnouncement() {
                // Jobs first: what they submit is then taken in the same pass.
                runJobs()
                let ((started, cancelled, stop), resolved, cancelledGroups) = inbox.withLock { inbox in
                    defer {
                        inbox.resolved = []
                        inbox.cancelledGroups = []
                    }
                    return (inbox.requests.take(), inbox.resolved, inbox.cancelledGroups)
                }
                stopping = stop
                if !started.isEmpty { lastRequestTaken = .now }
                for exchange in started { core.accept(exchange) }
                for exchange in cancelled { core.cancel(exchange) }
                for group in cancelledGroups { core.cancel(group) }
                for (connectionID, result) in resolved { core.resolved(connectionID: connectionID, result) }
            } else if sleptLightlyUntilTimeout {
                lastRequestTaken = .now - Self.busyWindow
            }

            let now = ContinuousClock.now
            core.prepareForPoll(now: now)
            if stopping, core.isIdle, inbox.withLock({ $0.jobs.isEmpty }) { break }

            descriptors.removeAll(keepingCapacity: true)
            owners.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: doorbell.readEnd, events: Int16(POLLIN), revents: 0))
            owners.append(0)
            core.pollDescriptors(into: &descriptors, owners: &owners)
            let busy = now - lastRequestTaken < Self.busyWindow
            let timeout = doorbell.timeoutBeforeSleeping(
                busy ? .lightly : .soundly, timeout: core.pollTimeoutMilliseconds(now: now))
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            doorbell.woke()
            sleptLightlyUntilTimeout = busy && ready == 0 && timeout > 0
            guard ready > 0 else { continue }
            if descriptors[0].revents != 0 { doorbell.drain() }
            for index in 1..<descriptors.count where descriptors[index].revents != 0 {
                core.handle(revents: descriptors[index].revents, connectionID: owners[index])
            }
        }
        core.closeAll()
        let left = inbox.withLock { inbox -> [UnownedJob] in
            inbox.requests.thread = .exited
            return inbox.takeJobs()
        }
        for job in left { globalConcurrentExecutor.enqueue(job) }
        finished.trigger()
    }

    /// How long one pass runs queued jobs before it reads and sends: a job is a sealing
    /// task's slice (`JobProcessor`'s are about 0.2 ms), and with a few dozen batches in
    /// flight as many slices can be queued at once, which run back to back would hold every
    /// connection of this loop for milliseconds.
    static let jobsPerPassBudget: Duration = .microseconds(300)

    /// Runs the jobs queued since the last pass, on this thread, until `jobsPerPassBudget`
    /// is spent; the rest go back to the head of the queue, ahead of newer ones, and the
    /// loop looks again before it sleeps.
    private func runJobs() {
        let jobs = inbox.withLock { $0.takeJobs() }
        guard !jobs.isEmpty else { return }
        let executor = asUnownedTaskExecutor()
        let deadline = ContinuousClock.now + Self.jobsPerPassBudget
        for (index, job) in jobs.enumerated() {
            if index > 0, ContinuousClock.now >= deadline {
                inbox.withLock { $0.jobs.insert(contentsOf: jobs[index...], at: 0) }
                doorbell.announceFromLoop()
                return
            }
            job.runSynchronously(on: executor)
        }
    }

    /// The loop could not start: every request, now and later, fails with `error`.
    private func failEverything(with error: HTTPClientError) {
        logger.error("http2 engine cannot start", ["error": .string(error.description)])
        let (waiting, jobs) = inbox.withLock { inbox -> ([Exchange], [UnownedJob]) in
            inbox.requests.stopping = true
            inbox.requests.thread = .exited
            return (inbox.requests.take().started, inbox.takeJobs())
        }
        for exchange in waiting { exchange.complete(.failure(error)) }
        for job in jobs { globalConcurrentExecutor.enqueue(job) }
        finished.trigger()
    }
}

/// The loop thread as an executor for tasks that prefer it: a worker's sealing tasks, so
/// that a push is sealed, built and sent on the thread that owns its connection.
///
/// Sealing on the pool and sending on the loop moved every push between two threads, and
/// most of its objects between two cores: in `bench apns` with a fresh envelope per push,
/// 31.4–33.1 µs of CPU per push that way against 28.4–30.1 sealed on the loop itself
/// (`Deploy/bench/experiments/README.md`). Jobs wait in the inbox and run at the start of a
/// pass; a sleeping loop is rung for them (lightly asleep too: a job can be a job's first
/// push, which should not wait a millisecond), an awake one takes them before it next
/// sleeps. A task that runs long holds the loop's I/O as long, so such tasks must suspend
/// (`Task.yield()`) every fraction of a millisecond; a pass runs queued jobs for
/// `jobsPerPassBudget` at most, however many are queued. Jobs arriving after the thread
/// exited, or before a thread that never starts, run on the global executor instead.
extension NativeHTTP2Loop: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queued = inbox.withLock { inbox -> Bool in
            switch inbox.requests.thread {
            case .notStarted, .running:
                inbox.jobs.append(job)
                return true
            case .neverStarted, .exited:
                return false
            }
        }
        if queued { doorbell.announcePromptly() } else { globalConcurrentExecutor.enqueue(job) }
    }
}
