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
extension JobProcessor {
    func dispatch(_ devices: [Device], lane: NotificationJob.Lane, context: JobContext) async -> [DeviceResult] {
        guard !devices.isEmpty else { return [] }
        let batch = DispatchedBatch(devices)
        return await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for _ in 0..<min(max(1, limits.encryptions), devices.count) {
                    group.addTask { await self.sealAndSubmit(from: batch, lane: lane, context: context) }
                }
            }
            return await batch.results()
        } onCancel: {
            batch.requests.cancel()
        }
    }

    /// One sealing task: takes devices until none is left, each under a delivery permit
    /// (the bound on pushes in flight) that its report returns. It checks for a device left
    /// before waiting for a permit: otherwise, once the last one is taken, the other sealing
    /// tasks would queue behind every other job's waiters for permits they hand straight back,
    /// and hold the batch's end until some other job's pushes answer.
    private nonisolated(nonsending) func sealAndSubmit(from batch: DispatchedBatch, lane: NotificationJob.Lane, context: JobContext) async {
        while !Task.isCancelled, batch.hasDevicesLeft {
            guard await takeDeliveryPermit(lane: lane) else { return }
            guard let device = batch.take() else {
                returnDeliveryPermit(lane: lane)
                return
            }
            metrics.deliveriesInFlight.add(1)
            await submit(to: device, context: context, group: batch.requests) { [self] outcome in
                metrics.deliveriesInFlight.add(-1)
                returnDeliveryPermit(lane: lane)
                batch.report(DeviceResult(device: device, outcome: outcome))
            }
        }
    }

    /// Seals for the device and submits the push; `finish` is called exactly once, with the
    /// outcome, on whichever thread settles it.
    private nonisolated(nonsending) func submit(
        to device: Device, context: JobContext, group: RequestGroup, finish: @escaping @Sendable (DeviceOutcome) -> Void
    ) async {
        let envelope: QuotedEnvelopeJSON?
        switch await self.envelope(for: device, context: context) {
        case .success(let sealed): envelope = sealed
        case .failure(let skipped):
            finish(skipped.outcome)
            return
        }
        let started = ContinuousClock.now
        let series = metrics.deliverySeconds[device.platform]
        let sent: @Sendable (DeliveryOutcome) -> Void = { outcome in
            series.observe(since: started)
            finish(.sent(outcome))
        }
        switch device.platform {
        case .ios:
            switch apnsNotification(for: device, envelope: envelope, context: context) {
            case .success(let notification): await submitAPNs(notification, of: device, group: group, sent)
            case .failure(let refused): sent(refused.outcome)
            }
        case .android:
            switch fcmBody(for: device, envelope: envelope, context: context) {
            case .success(let (client, body)): await client.submit(body: body, group: group, completion: sent)
            case .failure(let refused): sent(refused.outcome)
            }
        }
    }

    private nonisolated(nonsending) func submitAPNs(
        _ prepared: PreparedAPNs, of device: Device, group: RequestGroup, _ sent: @escaping @Sendable (DeliveryOutcome) -> Void
    ) async {
        await prepared.client.submit(prepared.notification, group: group) { [self] checked in
            guard let corrected = checked.correctedEnvironment else { return sent(checked.outcome) }
            // A database update: never on the loop thread.
            group.adopt(Task {
                await self.correctEnvironment(of: device, to: corrected == .sandbox ? .sandbox : .production)
                sent(checked.outcome)
            })
        }
    }
}
