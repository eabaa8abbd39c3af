import Foundation
import Synchronization

/// Lets callers interrupt the connection thread while it waits in `poll` for the broker.
///
/// The connection's event loop holds its dedicated thread while it waits for socket input,
/// so a `publish` or `ack` enqueued on the actor would otherwise wait for the next frame or
/// poll timeout. Callers announce themselves (`announce`) before hopping onto the actor; the
/// job calls `arrived` first thing. The loop only blocks while nobody is announced, and the
/// 0 → 1 transition writes one byte to a pipe it polls, so no announcement is ever missed.
final class Wakeup: Sendable {
    private let announced = Atomic<Int>(0)
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

    /// A job for the connection thread is on its way.
    func announce() {
        if announced.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue == 0 {
            var byte: UInt8 = 1
            // A full pipe (EAGAIN) is already readable, which is all that matters.
            _ = write(writeDescriptor, &byte, 1)
        }
    }

    /// The announced job is running on the connection thread.
    func arrived() {
        announced.wrappingSubtract(1, ordering: .acquiringAndReleasing)
    }

    var hasAnnounced: Bool { announced.load(ordering: .acquiring) > 0 }

    /// Empties the pipe after `poll` reported it readable.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readDescriptor, &buffer, buffer.count) > 0 {}
    }
}
