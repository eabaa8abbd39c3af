import Foundation
import PushModel
@testable import PushWorker
import Testing

@Suite("Worker metrics of a settled job")
struct WorkerMetricsTests {
    @Test("each device counts once under its platform and outcome; each follow-up under its kind")
    func record() {
        let metrics = WorkerMetrics()
        let results = [
            DeviceResult(device: Fixtures.device(1), outcome: .sent(.delivered(id: nil))),
            DeviceResult(device: Fixtures.device(2), outcome: .keyInvalid(.tooSmall(bits: 1024))),
            DeviceResult(device: Fixtures.device(3, platform: .android), outcome: .sent(.retryLater(reason: "UNAVAILABLE", retryAfter: nil))),
            DeviceResult(device: Fixtures.device(4), outcome: .sealingFailed("openssl")),
        ]
        let state = NotificationJob.RetryState(attempt: 2, firstAttemptAt: Fixtures.now, deviceIDs: [3])
        let device = Fixtures.device(2)
        metrics.record(results, followUps: [
            .retry(state, tier: Fixtures.tiers[1]),
            .keyInvalid(KeyInvalidEvent(device: device, reason: "small", jobID: "j", occurredAt: Fixtures.now)),
            .deadLetter(.retriesExhausted(.noTiers), retry: state),
        ])
        #expect(metrics.deliveries.value("ios", "delivered") == 1)
        #expect(metrics.deliveries.value("ios", "key_invalid") == 1)
        #expect(metrics.deliveries.value("android", "retry") == 1)
        #expect(metrics.deliveries.value("ios", "rejected") == 1)
        #expect(metrics.retries.value("30s") == 1)
        #expect(metrics.eventsPublished.value("key.invalid") == 1)
        #expect(metrics.eventsPublished.value("token.invalid") == 0)
        #expect(metrics.deadLetters.value("retries_exhausted") == 1)
    }
}
