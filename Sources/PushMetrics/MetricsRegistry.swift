import Synchronization

/// Counters, gauges and histograms with labels, rendered in the Prometheus text format.
///
/// Metrics are created once (at start-up) and then updated from any task: every update is
/// one short critical section on the metric's own lock, so hot paths never contend on a
/// registry-wide lock.
public final class MetricsRegistry: Sendable {
    private let metrics = Mutex<[any RenderableMetric]>([])

    public init() {}

    public func counter(_ name: String, help: String, labels: [String] = []) -> Counter {
        register(Counter(name: name, help: help, labelNames: labels))
    }

    public func gauge(_ name: String, help: String, labels: [String] = []) -> Gauge {
        register(Gauge(name: name, help: help, labelNames: labels))
    }

    public func histogram(_ name: String, help: String, labels: [String] = [], buckets: [Double] = Histogram.latencyBuckets) -> Histogram {
        register(Histogram(name: name, help: help, labelNames: labels, buckets: buckets))
    }

    private func register<Metric: RenderableMetric>(_ metric: Metric) -> Metric {
        metrics.withLock { $0.append(metric) }
        return metric
    }

    /// The exposition text (`text/plain; version=0.0.4`).
    public func render() -> String {
        let all = metrics.withLock { $0 }
        var output = ""
        for metric in all.sorted(by: { $0.name < $1.name }) {
            metric.render(into: &output)
        }
        return output
    }
}

protocol RenderableMetric: Sendable {
    var name: String { get }
    func render(into output: inout String)
}

/// Label values in a fixed order (the metric's label names).
struct LabelSet: Hashable, Sendable {
    let values: [String]

    func rendered(names: [String], extra: (String, String)? = nil) -> String {
        var pairs = zip(names, values).map { "\($0)=\"\(Self.escape($1))\"" }
        if let extra { pairs.append("\(extra.0)=\"\(extra.1)\"") }
        return pairs.isEmpty ? "" : "{" + pairs.joined(separator: ",") + "}"
    }

    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}

func header(_ name: String, _ help: String, _ type: String, into output: inout String) {
    output += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
}

/// One line per label set, sorted for stable output.
func renderSamples(_ name: String, _ labelNames: [String], _ values: [LabelSet: Double], into output: inout String) {
    for (labels, value) in values.sorted(by: { $0.key.values.lexicographicallyPrecedes($1.key.values) }) {
        output += "\(name)\(labels.rendered(names: labelNames)) \(format(value))\n"
    }
}

func format(_ value: Double) -> String {
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    return String(value)
}

/// Values by label set, each in its own `ValueSeries`: what counters and gauges both are.
final class LabelledValues: Sendable {
    let name: String
    let help: String
    let labelNames: [String]
    private let table = SeriesTable<ValueSeries>()

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
    }

    func series(_ labels: [String]) -> ValueSeries {
        precondition(labels.count == labelNames.count, "\(name) takes labels \(labelNames)")
        return table.series(LabelSet(values: labels), orMake: ValueSeries.init)
    }

    func update(_ labels: [String], _ change: (inout Double) -> Void) {
        series(labels).update(change)
    }

    func value(_ labels: [String]) -> Double {
        table.existing(LabelSet(values: labels))?.current ?? 0
    }

    func render(type: String, into output: inout String) {
        header(name, help, type, into: &output)
        renderSamples(name, labelNames, table.snapshot.mapValues(\.current), into: &output)
    }
}

/// A monotonically increasing count.
public final class Counter: RenderableMetric {
    private let store: LabelledValues
    public var name: String { store.name }

    init(name: String, help: String, labelNames: [String]) {
        store = LabelledValues(name: name, help: help, labelNames: labelNames)
    }

    public func increment(by amount: Double = 1, _ labels: String...) {
        store.update(labels) { $0 += amount }
    }

    public func value(_ labels: String...) -> Double { store.value(labels) }

    func render(into output: inout String) { store.render(type: "counter", into: &output) }
}

/// A value that goes up and down (in-flight work, connection state).
public final class Gauge: RenderableMetric {
    private let store: LabelledValues
    public var name: String { store.name }

    init(name: String, help: String, labelNames: [String]) {
        store = LabelledValues(name: name, help: help, labelNames: labelNames)
    }

    public func set(_ value: Double, _ labels: String...) {
        store.update(labels) { $0 = value }
    }

    public func add(_ delta: Double, _ labels: String...) {
        store.update(labels) { $0 += delta }
    }

    /// The series of `labels`, to keep and update without resolving the labels again.
    public func series(_ labels: String...) -> ValueSeries { store.series(labels) }

    public func value(_ labels: String...) -> Double { store.value(labels) }

    func render(into output: inout String) { store.render(type: "gauge", into: &output) }
}

/// Observations counted into cumulative buckets, with their sum and count.
public final class Histogram: RenderableMetric {
    /// Seconds, from 100 µs to 30 s: covers one encryption up to a slow delivery.
    public static let latencyBuckets: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    public let name: String
    let help: String
    let labelNames: [String]
    let buckets: [Double]
    private let table = SeriesTable<HistogramSeries>()

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.buckets = buckets.sorted()
    }

    public func observe(_ value: Double, _ labels: String...) {
        series(LabelSet(values: labels)).observe(value)
    }

    /// Observes the seconds elapsed since `start`.
    public func observe(since start: ContinuousClock.Instant, _ labels: String...) {
        series(LabelSet(values: labels)).observe(since: start)
    }

    /// The series of `labels`, to keep and observe without resolving the labels again.
    public func series(_ labels: String...) -> HistogramSeries { series(LabelSet(values: labels)) }

    private func series(_ key: LabelSet) -> HistogramSeries {
        table.series(key) { HistogramSeries(bounds: buckets) }
    }

    public func count(_ labels: String...) -> UInt64 {
        table.existing(LabelSet(values: labels))?.snapshot.count ?? 0
    }

    func render(into output: inout String) {
        header(name, help, "histogram", into: &output)
        for (labels, series) in table.snapshot.sorted(by: { $0.key.values.lexicographicallyPrecedes($1.key.values) }) {
            let entry = series.snapshot
            // Resolved ahead of use but never observed (the other platform's delivery times,
            // say): not exported, as before series could be resolved, so that a quantile over
            // it is absent rather than NaN.
            guard entry.count > 0 else { continue }
            var cumulative: UInt64 = 0
            for (index, bound) in buckets.enumerated() {
                cumulative += entry.bucketCounts[index]
                output += "\(name)_bucket\(labels.rendered(names: labelNames, extra: ("le", format(bound)))) \(cumulative)\n"
            }
            cumulative += entry.bucketCounts[buckets.count]
            output += "\(name)_bucket\(labels.rendered(names: labelNames, extra: ("le", "+Inf"))) \(cumulative)\n"
            output += "\(name)_sum\(labels.rendered(names: labelNames)) \(entry.sum)\n"
            output += "\(name)_count\(labels.rendered(names: labelNames)) \(entry.count)\n"
        }
    }
}
