import PushDelivery
import PushModel
import Synchronization

/// One batch's devices as its sealing tasks take them, and their results as the answers
/// arrive, on whatever thread answers (mostly an HTTP/2 loop thread).
///
/// The batch's pushes have no task each: a few tasks seal and submit, and the batch's one
/// task waits here, once, for every device taken to report.
final class DispatchedBatch: Sendable {
    private struct State {
        var results: [DeviceResult] = []
        /// Known once no sealing task takes another device.
        var expected: Int?
        var waiter: UnsafeContinuation<[DeviceResult], Never>?
    }

    let devices: [Device]
    /// Cancelled with the job: aborts the pushes in flight and the tasks following them up.
    let requests = RequestGroup()
    private let nextIndex = Atomic<Int>(0)
    private let state: Mutex<State>

    init(_ devices: [Device]) {
        self.devices = devices
        var state = State()
        state.results.reserveCapacity(devices.count)
        self.state = Mutex(state)
    }

    /// The next device no sealing task has taken, if any. A device taken must report.
    func take() -> Device? {
        let index = nextIndex.add(1, ordering: .relaxed).oldValue
        return index < devices.count ? devices[index] : nil
    }

    /// Whether a device is left to take (a hint: another task may take it first).
    var hasDevicesLeft: Bool { nextIndex.load(ordering: .relaxed) < devices.count }

    /// One taken device's result.
    func report(_ result: DeviceResult) {
        let finished = state.withLock { state -> (UnsafeContinuation<[DeviceResult], Never>, [DeviceResult])? in
            state.results.append(result)
            guard let expected = state.expected, state.results.count == expected, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, state.results)
        }
        if let (waiter, results) = finished { waiter.resume(returning: results) }
    }

    /// Once no sealing task runs: waits for every taken device's result. Cancellation does
    /// not cut this short; cancelling `requests` makes the answers come at once instead.
    func results() async -> [DeviceResult] {
        let taken = min(nextIndex.load(ordering: .relaxed), devices.count)
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
