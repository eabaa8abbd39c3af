import Foundation
import Synchronization

/// Lets other threads interrupt the connection thread while it waits in `poll` for the
/// broker, and tells that thread whether anyone is waiting for it.
///
/// Two kinds of work arrive from other threads: actor calls (`consume`, `close`, …), which
/// `announce` themselves before hopping onto the actor and call `arrived` first thing, and
/// mailbox items (publishes, acks), which `notify`. The event loop only blocks while
/// nothing is announced or posted. The byte that wakes it is written only while it sleeps:
/// the loop sets `sleeping` before its last look for work, and senders clear it after
/// making their work visible, all sequentially consistent — so either the loop sees the
/// work, or the sender sees the loop asleep and writes. No wakeup is lost, and a busy loop
/// costs senders no system call.
final class Wakeup: Sendable {
    private let announced = Atomic<Int>(0)
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

    /// An actor call for the connection thread is on its way.
    func announce() {
        announced.wrappingAdd(1, ordering: .sequentiallyConsistent)
        notify()
    }

    /// The announced call is running on the connection thread.
    func arrived() {
        announced.wrappingSubtract(1, ordering: .sequentiallyConsistent)
    }

    var hasAnnounced: Bool { announced.load(ordering: .sequentiallyConsistent) > 0 }

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
        if hasAnnounced || hasWork() {
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
}
