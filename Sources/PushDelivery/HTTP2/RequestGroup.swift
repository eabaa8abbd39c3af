import Synchronization

/// Requests, and the tasks that follow them up, cancelled together: a batch's pushes when
/// the job they belong to is cancelled (the worker is stopping).
///
/// A request sent with `HTTP2Client.submit` has no task of its own whose cancellation could
/// abort it, so it names a group instead. Cancelling the group aborts its requests still in
/// flight (each completes with `HTTPClientError.cancelled`), refuses the ones submitted
/// afterwards the same way, and cancels the tasks it adopted.
public final class RequestGroup: Sendable {
    private struct State {
        /// The clients that carry requests of this group, each to be told to abort them.
        var cancellers: [ObjectIdentifier: any RequestCanceller] = [:]
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// Set under `state`'s lock, before any canceller runs, and read there too; the HTTP/2
    /// loop reads it without the lock as it takes a request, so a request the loop takes
    /// after a cancellation is refused.
    private let cancelledFlag = Atomic<Bool>(false)
    /// The client enlisted last (its `ObjectIdentifier`'s bits), stored after it is in
    /// `state`: the group's pushes all go through one or two clients, so enlisting again,
    /// once per push from every sealing thread, is one load instead of the lock and a hash.
    /// (The group keeps each enlisted client, so its address cannot be reused meanwhile.)
    private let lastEnlisted = Atomic<UInt>(0)

    public init() {}

    public var isCancelled: Bool { cancelledFlag.load(ordering: .acquiring) }

    /// Cancels the group's requests and tasks, now and to come. Idempotent.
    public func cancel() {
        let (cancellers, tasks) = state.withLock { state -> ([any RequestCanceller], [Task<Void, Never>]) in
            guard !isCancelled else { return ([], []) }
            cancelledFlag.store(true, ordering: .releasing)
            defer { state.tasks = [] }
            return (Array(state.cancellers.values), state.tasks)
        }
        for canceller in cancellers { canceller.cancelRequests(of: self) }
        for task in tasks { task.cancel() }
    }

    /// Cancels `task` with the group (at once if the group is already cancelled).
    public func adopt(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            if isCancelled { return true }
            state.tasks.append(task)
            return false
        }
        if cancelNow { task.cancel() }
    }

    /// Registers `client` (once; later calls are a look-up) to abort the group's requests
    /// when the group is cancelled; told at once if it already is.
    func enlist(_ client: any RequestCanceller) {
        let key = ObjectIdentifier(client)
        let bits = UInt(bitPattern: key)
        if lastEnlisted.load(ordering: .acquiring) == bits { return }
        let cancelNow = state.withLock { state -> Bool in
            if isCancelled { return true }
            if state.cancellers[key] == nil { state.cancellers[key] = client }
            lastEnlisted.store(bits, ordering: .releasing)
            return false
        }
        if cancelNow { client.cancelRequests(of: self) }
    }
}

/// A client that aborts a cancelled group's requests (`HTTP2Client`). A protocol rather
/// than a closure, so enlisting for every request allocates nothing.
protocol RequestCanceller: AnyObject, Sendable {
    func cancelRequests(of group: RequestGroup)
}
