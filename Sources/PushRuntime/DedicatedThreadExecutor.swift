import Foundation
import Synchronization

/// A serial executor that runs every job on one dedicated OS thread.
///
/// The C clients we wrap block and are not thread-safe (libpq here; rabbitmq-c and libcurl
/// each have a thread of their own that owns the handle). An actor whose
/// `unownedExecutor` is one of these owns its connection: every method runs on the same
/// thread, one at a time, and a blocking C call stalls only that thread, never Swift's
/// cooperative pool.
///
///     actor Connection {
///         let executor = DedicatedThreadExecutor(name: "pg-1")
///         nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
///     }
public final class DedicatedThreadExecutor: SerialExecutor, TaskExecutor {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var stopped = false
    }

    private let queue = Mutex(Queue())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let threadID = Mutex<pthread_t?>(nil)
    public let name: String

    /// Starts the thread, named `name` for the OS too (see `ThreadName`). It runs until
    /// `shutdown()`; jobs still queued then are run first.
    public init(name: String) {
        self.name = name
        ThreadName.startThread(named: name) { [self] in loop() }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let accepted = queue.withLock { queue -> Bool in
            guard !queue.stopped else { return false }
            queue.jobs.append(job)
            return true
        }
        // A job arriving after shutdown still runs (dropping it would leak its task), on the
        // caller's thread: the connection it belongs to is closed by then.
        guard accepted else {
            job.runSynchronously(on: asUnownedSerialExecutor())
            return
        }
        wakeUp.signal()
    }

    /// Whether the caller runs on this executor's thread: for assertions around C calls.
    public var isCurrentThread: Bool {
        threadID.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Stops the thread once the queued jobs have run.
    public func shutdown() {
        queue.withLock { $0.stopped = true }
        wakeUp.signal()
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private func loop() {
        threadID.withLock { $0 = pthread_self() }
        while true {
            wakeUp.wait()
            let (jobs, stopped) = queue.withLock { queue in
                defer { queue.jobs.removeAll(keepingCapacity: true) }
                return (queue.jobs, queue.stopped)
            }
            for job in jobs {
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
            if stopped && queue.withLock({ $0.jobs.isEmpty }) { return }
        }
    }
}
