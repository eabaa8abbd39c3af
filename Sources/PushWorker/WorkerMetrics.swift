import PushMetrics
import PushModel

/// The worker's metrics (documented in the README's operations section).
public struct WorkerMetrics: Sendable {
    public let registry: MetricsRegistry
    let jobsConsumed: Counter
    let jobsCompleted: Counter
    let deliveries: Counter
    let eventsPublished: Counter
    let retries: Counter
    let deadLetters: Counter
    let recipientsCapped: Counter
    let environmentsCorrected: Counter
    let jobsInFlight: Gauge
    // The next three change for every delivery: held as resolved series, so an update takes
    // one short lock and no label work.
    let deliveriesInFlight: ValueSeries
    let encryptionSeconds: HistogramSeries
    let deliverySeconds: ByPlatform<HistogramSeries>
    let liveActivitySkipped: Counter
    let publicKeyTexts: Counter

    public init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        jobsConsumed = registry.counter("pushd_jobs_consumed_total", help: "Job messages received from the jobs queue.")
        jobsCompleted = registry.counter(
            "pushd_jobs_completed_total", help: "Jobs settled, by result (acked, requeued, dead_lettered).", labels: ["result"])
        deliveries = registry.counter(
            "pushd_deliveries_total", help: "Pushes by platform and outcome (delivered, invalid_token, retry, rejected, configuration_error, key_invalid).",
            labels: ["platform", "outcome"])
        eventsPublished = registry.counter("pushd_events_published_total", help: "Events published, by type.", labels: ["event"])
        retries = registry.counter("pushd_retries_total", help: "Retry jobs published, by tier.", labels: ["tier"])
        deadLetters = registry.counter("pushd_dead_letters_total", help: "Messages dead-lettered by the worker, by cause.", labels: ["cause"])
        recipientsCapped = registry.counter(
            "pushd_recipients_capped_total",
            help: "Recipients with more devices than max_devices_per_recipient; only the most recently registered were sent to.")
        environmentsCorrected = registry.counter(
            "pushd_apns_environment_corrections_total",
            help: "iOS tokens refused as BadDeviceToken in their registered environment and accepted in the other (corrected, or unchanged when the update did not apply).",
            labels: ["result"])
        jobsInFlight = registry.gauge("pushd_jobs_in_flight", help: "Jobs being processed now.")
        deliveriesInFlight = registry.gauge("pushd_deliveries_in_flight", help: "Pushes being encrypted or sent now.").series()
        encryptionSeconds = registry.histogram("pushd_encryption_seconds", help: "Time to seal one envelope.").series()
        let deliverySeconds = registry.histogram(
            "pushd_delivery_seconds", help: "Time from sending a push to its answer, by platform.", labels: ["platform"])
        self.deliverySeconds = ByPlatform { deliverySeconds.series($0.rawValue) }
        liveActivitySkipped = registry.counter(
            "pushd_liveactivity_skipped_total",
            help: "Devices of Live Activity jobs sent nothing: no_token (no push-to-start or update token), android (no android_fallback).",
            labels: ["reason", "event"])
        publicKeyTexts = registry.counter(
            "pushd_public_key_texts_total",
            help: "Device public keys by where the device lookup took their text: database (sent whole) or cache (sent as a digest, the text from this worker's key cache).",
            labels: ["source"])
    }
}

/// One value per platform, made once.
struct ByPlatform<Value: Sendable>: Sendable {
    private let ios: Value
    private let android: Value

    init(_ make: (Platform) -> Value) {
        ios = make(.ios)
        android = make(.android)
    }

    subscript(platform: Platform) -> Value {
        switch platform {
        case .ios: ios
        case .android: android
        }
    }
}
