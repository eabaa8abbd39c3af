import PushMetrics

/// The cleanup consumer's metrics (documented in the README's operations section).
public struct CleanupMetrics: Sendable {
    public let registry: MetricsRegistry
    let tokensPruned: Counter
    let pruneEvents: Counter

    public init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        tokensPruned = registry.counter("pushd_tokens_pruned_total", help: "Devices deleted by the cleanup consumer, by platform.", labels: ["platform"])
        pruneEvents = registry.counter(
            "pushd_cleanup_events_total", help: "token.invalid events handled, by result (pruned, kept, malformed).", labels: ["result"])
    }
}
