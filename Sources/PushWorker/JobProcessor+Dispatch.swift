import PushCrypto
import PushDelivery
import PushModel
import PushStore

/// A batch's devices sealed and sent without a task per device.
///
/// A task per push cost about 8 µs of CPU in the bare APNs benchmark (its creation, its
/// continuation and the resumption that schedules it again), a third of what sealing costs.
/// So a batch runs `limits.encryptions` sealing tasks (sealing is the CPU work, bounded by
/// the cores anyway), each taking the next device, sealing and submitting it; the answer is
/// settled where it arrives, on the HTTP/2 loop thread, and reported to the batch, whose
/// one task waits for them all. Pushes that need more than one exchange (the first on a
/// connection, a resend, another environment) go on in tasks the batch's request group
/// adopts, so a cancelled job cancels them too.
///
/// With `limits.sealOnLoops`, each device is sealed on the HTTP/2 loop thread of the client
/// that sends it (one sealing task per loop, preferring it as its executor), so a push is
/// sealed, built and sent by one thread; sealing on the pool and handing the push to the loop
/// cost 2–4 µs more per push (`NativeHTTP2Loop`'s `TaskExecutor` conformance says why). The
/// pool still seals what a loop should not (`batchByLoop`) and helps a batch that reaches
/// fewer loops than it may seal on at once (`sealingTasks`).
extension JobProcessor {
    func dispatch(_ devices: [Device], lane: NotificationJob.Lane, context: JobContext) async -> [DeviceResult] {
        guard !devices.isEmpty else { return [] }
        let (batch, executors) = limits.sealOnLoops ? batchByLoop(devices) : (DispatchedBatch(devices), [nil])
        let tasks = Self.sealingTasks(
            queueSizes: executors.indices.map(batch.count(inQueue:)), onLoop: executors.map { $0 != nil },
            encryptions: limits.encryptions)
        return await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for task in tasks {
                    if task.onLoop, let executor = executors[task.queue] {
                        group.addTask(executorPreference: executor) {
                            await self.sealAndSubmit(from: batch, queue: task.queue, yieldingAfter: Self.sliceOnLoop, lane: lane, context: context)
                        }
                    } else {
                        group.addTask { await self.sealAndSubmit(from: batch, queue: task.queue, lane: lane, context: context) }
                    }
                }
            }
            return await batch.results()
        } onCancel: {
            batch.requests.cancel()
        }
    }

    /// The sealing tasks of a batch, each taking devices from one queue: one per loop queue,
    /// on that loop (the loop is one thread); up to `encryptions` on the pool for a queue
    /// without a loop; and, when the batch reaches fewer loops than `encryptions` (a job of
    /// one platform), pool tasks that help the loop queues big enough to share, largest
    /// first, so such a job is sealed on every core the worker may seal on instead of on its
    /// one loop thread. The pushes a helper seals cross to the loop as on the pool (2-4 µs
    /// more each); a batch reaching as many loops as `encryptions`, the usual worker with
    /// both platforms on two cores, gets no helper.
    static func sealingTasks(queueSizes: [Int], onLoop: [Bool], encryptions: Int) -> [SealingTask] {
        let encryptions = max(1, encryptions)
        var tasks: [SealingTask] = []
        var loopQueues: [Int] = []
        for (queue, size) in queueSizes.enumerated() where size > 0 {
            if onLoop[queue] {
                tasks.append(SealingTask(queue: queue, onLoop: true))
                loopQueues.append(queue)
            } else {
                tasks.append(contentsOf: repeatElement(SealingTask(queue: queue, onLoop: false), count: min(encryptions, size)))
            }
        }
        let shared = loopQueues.filter { queueSizes[$0] >= minimumDevicesToShareALoop }.sorted { queueSizes[$0] > queueSizes[$1] }
        guard !shared.isEmpty else { return tasks }
        for helper in 0..<max(0, encryptions - loopQueues.count) {
            let queue = shared[helper % shared.count]
            // No more tasks on a queue than it has devices.
            guard tasks.count(where: { $0.queue == queue }) < queueSizes[queue] else { continue }
            tasks.append(SealingTask(queue: queue, onLoop: false))
        }
        return tasks
    }

    /// One sealing task of a batch: the queue it takes devices from, and whether it runs on
    /// that queue's loop thread or on the pool.
    struct SealingTask: Equatable {
        let queue: Int
        let onLoop: Bool
    }

    /// A loop queue shorter than this is sealed by its loop alone (about 0.4 ms of sealing):
    /// a helper would cost a task and hand its few pushes across threads for little.
    static let minimumDevicesToShareALoop = 16

    /// How long a sealing task on a loop thread seals before it lets the loop read and send
    /// (about 8 envelopes): the loop runs nothing else while the task runs. Timed rather than
    /// counted, so that a key OpenSSL checks in full (4–7 ms, below) is one push's stall, not
    /// the start of a count's worth of them.
    static let sliceOnLoop: Duration = .microseconds(200)

    /// The devices in one queue per loop thread that sends them, in the order first met, and
    /// in a last queue for the pool those whose client has no loop (or who have no client)
    /// and those whose key may need OpenSSL's full check (`DeliveryRouter.sealingExecutor`):
    /// a key no worker has checked yet costs 4–7 ms once in the cluster, which on a loop
    /// would hold every connection of that loop for as long. The row says so at no cost (a
    /// key recorded as checked, or taken from this worker's cache, needs none), so a
    /// broadcast to devices registered by some other backend, their keys never checked,
    /// stalls no connection.
    private func batchByLoop(_ devices: [Device]) -> (DispatchedBatch, [(any TaskExecutor)?]) {
        let (queues, executors) = Self.queuesByLoop(devices, sealingExecutor: router.sealingExecutor(for:))
        return (DispatchedBatch(queues: queues), executors)
    }

    /// `batchByLoop`'s split, given where each device is to be sealed (nil: the pool).
    static func queuesByLoop(
        _ devices: [Device], sealingExecutor: (Device) -> (any TaskExecutor)?
    ) -> (queues: [[Device]], executors: [(any TaskExecutor)?]) {
        var queues: [[Device]] = []
        var executors: [(any TaskExecutor)?] = []
        var queueOfExecutor: [ObjectIdentifier: Int] = [:]
        var poolQueue: [Device] = []
        for device in devices {
            guard let executor = sealingExecutor(device) else {
                poolQueue.append(device)
                continue
            }
            let identity = ObjectIdentifier(executor as AnyObject)
            if let index = queueOfExecutor[identity] {
                queues[index].append(device)
            } else {
                queueOfExecutor[identity] = queues.count
                executors.append(executor)
                queues.append([device])
            }
        }
        if !poolQueue.isEmpty {
            queues.append(poolQueue)
            executors.append(nil)
        }
        return (queues, executors)
    }

    /// One sealing task: takes devices until none is left, each under a delivery permit
    /// (the bound on pushes in flight) that its report returns. It checks for a device left
    /// before waiting for a permit: otherwise, once the last one is taken, the other sealing
    /// tasks would queue behind every other job's waiters for permits they hand straight back,
    /// and hold the batch's end until some other job's pushes answer.
    ///
    /// A task on a loop thread (`yieldingAfter`) suspends once it has sealed that long, so
    /// the loop sends those pushes and reads answers before it seals more.
    private nonisolated(nonsending) func sealAndSubmit(
        from batch: DispatchedBatch, queue: Int, yieldingAfter slice: Duration? = nil, lane: NotificationJob.Lane,
        context: JobContext
    ) async {
        var sliceStarted = ContinuousClock.now
        while !Task.isCancelled, batch.hasDevicesLeft(inQueue: queue) {
            if let slice, ContinuousClock.now - sliceStarted >= slice {
                await Task.yield()
                sliceStarted = .now
            }
            guard await takeDeliveryPermit(lane: lane) else { return }
            guard let device = batch.take(fromQueue: queue) else {
                returnDeliveryPermit(lane: lane)
                return
            }
            metrics.deliveriesInFlight.add(1)
            await submit(to: device, context: context, batch: batch, lane: lane)
        }
    }

    /// Seals for the device and submits the push; the outcome is settled exactly once
    /// (`settle`), on whichever thread it is known.
    private nonisolated(nonsending) func submit(
        to device: Device, context: JobContext, batch: DispatchedBatch, lane: NotificationJob.Lane
    ) async {
        let envelope: QuotedEnvelopeJSON?
        switch await self.envelope(for: device, context: context) {
        case .success(let sealed): envelope = sealed
        case .failure(let skipped):
            settle(device, lane: lane, batch: batch, outcome: skipped.outcome)
            return
        }
        let push = PushInFlight(processor: self, batch: batch, device: device, lane: lane, started: .now)
        switch device.platform {
        case .ios:
            switch apnsNotification(for: device, envelope: envelope, context: context) {
            case .success(let prepared):
                await prepared.client.submit(prepared.notification, group: batch.requests) { push.apnsAnswered($0) }
            case .failure(let refused): push.sent(refused.outcome)
            }
        case .android:
            switch fcmBody(for: device, envelope: envelope, context: context) {
            case .success(let (client, body)): await client.submit(body: body, group: batch.requests) { push.sent($0) }
            case .failure(let refused): push.sent(refused.outcome)
            }
        }
    }

    /// A taken device's end: its permit back, its result to the batch.
    ///
    /// Called exactly once for each device taken from its batch under a delivery permit,
    /// after `deliveriesInFlight.add(1)` counted it: twice would return a permit never taken
    /// and report the device again; never would leave the permit out and the batch waiting.
    func settle(_ device: Device, lane: NotificationJob.Lane, batch: DispatchedBatch, outcome: DeviceOutcome) {
        metrics.deliveriesInFlight.add(-1)
        returnDeliveryPermit(lane: lane)
        batch.report(DeviceResult(device: device, outcome: outcome))
    }
}
