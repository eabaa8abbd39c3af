import PushDelivery
import PushModel

/// One sealed push on its way: everything its answer needs, in one object.
///
/// The answer passes through the provider client's completion, the delivery histogram, the
/// permit and the batch's report. As a closure per step, each allocated its own context and
/// retained the processor, the batch and the device again, and those objects are shared by
/// every thread that seals or answers, so each retain and release was an atomic on a cache
/// line another core had just written. Here they are retained once, and the steps of a
/// usual answer capture only this object (a corrected environment's task also captures the
/// verdict it carries on).
final class PushInFlight: Sendable {
    let processor: JobProcessor
    let batch: DispatchedBatch
    let device: Device
    let lane: NotificationJob.Lane
    /// When the push was made, after sealing and before its request is built: what
    /// `pushd_delivery_seconds` measures (a local refusal's time included).
    let started: ContinuousClock.Instant

    init(processor: JobProcessor, batch: DispatchedBatch, device: Device, lane: NotificationJob.Lane, started: ContinuousClock.Instant) {
        self.processor = processor
        self.batch = batch
        self.device = device
        self.lane = lane
        self.started = started
    }

    /// The provider's verdict (or a local refusal in its terms).
    func sent(_ outcome: DeliveryOutcome) {
        processor.metrics.deliverySeconds[device.platform].observe(since: started)
        processor.settle(device, lane: lane, batch: batch, outcome: .sent(outcome))
    }

    /// APNs's verdict, after the other environment was tried if the token belonged there: a
    /// corrected environment is a database update, never made on the loop thread.
    func apnsAnswered(_ checked: APNsClient.EnvironmentCheckedOutcome) {
        guard let corrected = checked.correctedEnvironment else { return sent(checked.outcome) }
        batch.requests.adopt(Task {
            await self.processor.correctEnvironment(of: self.device, to: corrected == .sandbox ? .sandbox : .production)
            self.sent(checked.outcome)
        })
    }
}
