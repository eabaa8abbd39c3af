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

    @Test("a duration since an instant is observed in seconds, whole and fraction")
    func observedSince() throws {
        let registry = MetricsRegistry()
        let latency = registry.histogram("pushd_seal_seconds", help: "Sealing.", buckets: [0.2, 2, 1000])
        let series = latency.series()
        // Instants in the past, so the elapsed time is at least these, whatever the machine's speed.
        series.observe(since: ContinuousClock.now - .milliseconds(250))
        series.observe(since: ContinuousClock.now - .milliseconds(2500))
        // Past 2^64 attoseconds (18.4 s), the other path.
        series.observe(since: ContinuousClock.now - .seconds(20))
        let text = registry.render()
        #expect(text.contains(#"pushd_seal_seconds_bucket{le="0.2"} 0"#), "a quarter of a second is more than 0.2 s")
        #expect(text.contains(#"pushd_seal_seconds_bucket{le="2"} 1"#), "two and a half seconds are more than 2 s")
        #expect(text.contains(#"pushd_seal_seconds_bucket{le="1000"} 3"#))
        let sumLine = try #require(text.split(separator: "\n").first { $0.hasPrefix("pushd_seal_seconds_sum ") })
        let sum = try #require(Double(sumLine.dropFirst("pushd_seal_seconds_sum ".count)))
        #expect(sum >= 22.75 && sum < 1000, "the sum is \(sum)")
    }

    @Test("label values are escaped")
    func escaping() {
        let registry = MetricsRegistry()
        registry.counter("c", help: "h", labels: ["reason"]).increment("a \"quoted\"\nreason")
        #expect(registry.render().contains(#"c{reason="a \"quoted\"\nreason"} 1"#))
    }

    @Test("a resolved series is the metric's own: updates through either are one value, rendered once")
    func resolvedSeries() {
        let registry = MetricsRegistry()
        let latency = registry.histogram("pushd_delivery_seconds", help: "Latency.", labels: ["platform"], buckets: [0.1, 1])
        let ios = latency.series("ios")
        let unused = latency.series("android")
        ios.observe(0.05)
        latency.observe(0.5, "ios")
        #expect(latency.count("ios") == 2)
        #expect(unused !== ios)
        #expect(latency.series("ios") === ios, "resolving again gives the same series")

        let inFlight = registry.gauge("pushd_in_flight", help: "In flight.")
        let series = inFlight.series()
        series.add(2)
        inFlight.add(1)
        series.add(-1)
        #expect(inFlight.value() == 2)

        let text = registry.render()
        #expect(text.contains(#"pushd_delivery_seconds_bucket{platform="ios",le="0.1"} 1"#))
        #expect(text.contains(#"pushd_delivery_seconds_count{platform="ios"} 2"#))
        // A histogram series resolved ahead of use is exported once it has an observation.
        #expect(!text.contains(#"platform="android""#))
        unused.observe(2)
        #expect(registry.render().contains(#"pushd_delivery_seconds_count{platform="android"} 1"#))
        #expect(text.components(separatedBy: "pushd_in_flight 2\n").count == 2, "one sample, not one per path")
    }

    @Test("changes made from many threads at once are each applied exactly once")
    func concurrentChanges() async {
        let registry = MetricsRegistry()
        let inFlight = registry.gauge("pushd_in_flight", help: "In flight.").series()
        let total = registry.counter("pushd_total", help: "Total.")
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for step in 0..<20_000 {
                        inFlight.add(1)
                        total.increment(by: 0.5)
                        if step % 2 == 0 || task == 0 { inFlight.add(-1) }
                    }
                }
            }
        }
        // Seven tasks leave half their steps in flight; task 0 none.
        #expect(inFlight.current == 7 * 10_000)
        #expect(total.value() == 8 * 20_000 * 0.5)
        inFlight.set(-3.25)
        #expect(inFlight.current == -3.25)
    }
}
