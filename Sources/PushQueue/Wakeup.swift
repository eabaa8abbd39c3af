import Foundation
import Synchronization

/// Lets other threads interrupt the connection thread while it waits in `poll` for the
/// broker (or for the backoff to pass).
///
/// Everything for the connection thread arrives through its `Mailbox`, which calls `notify`
/// after making the work visible. The byte that wakes the thread is written only while it
/// sleeps: the thread sets `sleeping` before its last look for work, and senders clear it
/// after making their work visible, all sequentially consistent — so either the thread sees
/// the work, or the sender sees it asleep and writes. No wakeup is lost, and a busy thread
/// costs senders no system call.
final class Wakeup: Sendable {
    private let sleeping = Atomic<Bool>(false)
    let readDescriptor: Int32
    private let writeDescriptor: Int32

    init() throws(QueueError) {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else {
            throw .library(operation: "pipe", status: errno, message: String(cString: strerror(errno)))
        }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        readDescriptor = descriptors[0]
        writeDescriptor = descriptors[1]
    }

    deinit {
        close(readDescriptor)
        close(writeDescriptor)
    }

    /// Work is visible to the loop: wake it if it sleeps.
    func notify() {
        if sleeping.exchange(false, ordering: .sequentiallyConsistent) {
            var byte: UInt8 = 1
            // A full pipe (EAGAIN) is already readable, which is all that matters.
            _ = write(writeDescriptor, &byte, 1)
        }
    }

    /// The loop is about to block: from now on senders write. Returns false (and stays
    /// awake) if work arrived before it could.
    func prepareToSleep(hasWork: () -> Bool) -> Bool {
        sleeping.store(true, ordering: .sequentiallyConsistent)
        if hasWork() {
            sleeping.store(false, ordering: .sequentiallyConsistent)
            return false
        }
        return true
    }

    /// The loop is awake again; empties the pipe if it was written.
    func awoke(pipeReadable: Bool) {
        sleeping.store(false, ordering: .sequentiallyConsistent)
        if pipeReadable {
            var buffer = [UInt8](repeating: 0, count: 64)
            while read(readDescriptor, &buffer, buffer.count) > 0 {}
        }
    }

    /// Sleeps until notified or `timeout` has passed, unless work is already there.
    func wait(timeout: Duration, hasWork: () -> Bool) {
        guard prepareToSleep(hasWork: hasWork) else { return }
        var descriptor = pollfd(fd: readDescriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: max(0, Topology.milliseconds(timeout)))
        let woke = poll(&descriptor, 1, milliseconds) > 0
        awoke(pipeReadable: woke)
    }
}
