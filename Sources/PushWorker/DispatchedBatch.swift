import PushDelivery
import PushModel
import Synchronization

/// One batch's devices as its sealing tasks take them, and their results as the answers
/// arrive, on whatever thread answers (mostly an HTTP/2 loop thread).
///
/// The batch's pushes have no task each: a few tasks seal and submit, and the batch's one
/// task waits here, once, for every device taken to report. The devices may be split into
/// queues, one per thread that seals them (`JobProcessor.dispatch`); each sealing task takes
/// from one queue.
final class DispatchedBatch: Sendable {
    /// One queue's devices and how many of them were taken.
    private final class Queue: Sendable {
        let devices: [Device]
        let nextIndex = Atomic<Int>(0)

        init(_ devices: [Device]) { self.devices = devices }

        var taken: Int { min(nextIndex.load(ordering: .relaxed), devices.count) }
    }

    private struct State {
        var results: [DeviceResult] = []
        /// Known once no sealing task takes another device.
        var expected: Int?
        var waiter: UnsafeContinuation<[DeviceResult], Never>?
    }

    /// Cancelled with the job: aborts the pushes in flight and the tasks following them up.
    let requests = RequestGroup()
    private let queues: [Queue]
    private let state: Mutex<State>

    /// - Parameter queues: the devices, in one queue or several (none empty).
    init(queues: [[Device]]) {
        self.queues = queues.map(Queue.init)
        var state = State()
        state.results.reserveCapacity(queues.reduce(0) { $0 + $1.count })
        self.state = Mutex(state)
    }

    convenience init(_ devices: [Device]) {
        self.init(queues: [devices])
    }

    /// How many devices queue `queue` holds.
    func count(inQueue queue: Int) -> Int { queues[queue].devices.count }

    /// The next device of `queue` no sealing task has taken, if any. A device taken must report.
    func take(fromQueue queue: Int = 0) -> Device? {
        let queue = queues[queue]
        let index = queue.nextIndex.add(1, ordering: .relaxed).oldValue
        return index < queue.devices.count ? queue.devices[index] : nil
    }

    /// Whether `queue` has a device left to take (a hint: another task may take it first).
    func hasDevicesLeft(inQueue queue: Int = 0) -> Bool {
        queues[queue].nextIndex.load(ordering: .relaxed) < queues[queue].devices.count
    }

    /// One taken device's result, moved into the batch's results rather than copied: a copy
    /// retained the device and the outcome's strings once more, on the loop thread, for the
    /// caller's copy to release them just after.
    func report(_ result: consuming DeviceResult) {
        var result = Optional(result)
        let finished = state.withLock { state -> (UnsafeContinuation<[DeviceResult], Never>, [DeviceResult])? in
            if let result = result.take() { state.results.append(result) }
            guard let expected = state.expected, state.results.count == expected, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, state.results)
        }
        if let (waiter, results) = finished { waiter.resume(returning: results) }
    }

    /// Once no sealing task runs: waits for every taken device's result. Cancellation does
    /// not cut this short; cancelling `requests` makes the answers come at once instead.
    func results() async -> [DeviceResult] {
        let taken = queues.reduce(0) { $0 + $1.taken }
        return await withUnsafeContinuation { (waiter: UnsafeContinuation<[DeviceResult], Never>) in
            let ready = state.withLock { state -> [DeviceResult]? in
                state.expected = taken
                if state.results.count == taken { return state.results }
                state.waiter = waiter
                return nil
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }
}
