import Foundation
import PushMetrics
import PushRuntime
import Testing

@Suite("Metrics")
struct MetricsTests {
    @Test("counters, gauges and histograms render in the Prometheus text format")
    func rendering() {
        let registry = MetricsRegistry()
        let deliveries = registry.counter("pushd_deliveries_total", help: "Deliveries by outcome.", labels: ["platform", "outcome"])
        let inFlight = registry.gauge("pushd_in_flight", help: "In flight.")
        let latency = registry.histogram("pushd_delivery_seconds", help: "Latency.", buckets: [0.1, 1])
        deliveries.increment("ios", "delivered")
        deliveries.increment(by: 2, "android", "invalid_token")
        inFlight.set(3)
        latency.observe(0.05)
        latency.observe(0.5)
        latency.observe(5)
        let text = registry.render()
        #expect(text.contains("# TYPE pushd_deliveries_total counter"))
        #expect(text.contains(#"pushd_deliveries_total{platform="ios",outcome="delivered"} 1"#))
        #expect(text.contains(#"pushd_deliveries_total{platform="android",outcome="invalid_token"} 2"#))
        #expect(text.contains("pushd_in_flight 3"))
        #expect(text.contains(#"pushd_delivery_seconds_bucket{le="0.1"} 1"#))
        #expect(text.contains(#"pushd_delivery_seconds_bucket{le="1"} 2"#))
        #expect(text.contains(#"pushd_delivery_seconds_bucket{le="+Inf"} 3"#))
        #expect(text.contains("pushd_delivery_seconds_count 3"))
    }

    @Test("label values are escaped")
    func escaping() {
        let registry = MetricsRegistry()
        registry.counter("c", help: "h", labels: ["reason"]).increment("a \"quoted\"\nreason")
        #expect(registry.render().contains(#"c{reason="a \"quoted\"\nreason"} 1"#))
    }
}
