import Synchronization

/// One label set of a counter or gauge: its value in one atomic word.
///
/// A hot path resolves the series once and keeps it (`Gauge.series`), so an update takes
/// only this word; updating through the metric with labels builds, hashes and looks up the
/// label set first, under the metric's lock (measured: twice per delivery, each a label
/// array and a hash).
///
/// The value is held as its bit pattern and changed by compare-and-exchange: one atomic per
/// change, where a lock took two (taking and releasing it) and, contended, a futex. The
/// in-flight gauge changes twice per delivery, from every thread that seals or answers.
/// Relaxed ordering: a sample publishes nothing else, and each change is still applied
/// exactly once, in some order (whole numbers below 2^53, as counts are, add up exactly in
/// any order; fractions may round differently by order, as with any sum of doubles).
public final class ValueSeries: Sendable {
    /// `Double.bitPattern` of the value; 0 is the pattern of 0.0.
    private let bits = Atomic<UInt64>(0)

    init() {}

    public func add(_ delta: Double) { update { $0 += delta } }
    public func set(_ newValue: Double) { bits.store(newValue.bitPattern, ordering: .relaxed) }
    public var current: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }

    /// Applies `change` to the value as it is when the exchange succeeds: `change` may run
    /// more than once under contention, so it must only compute the new value.
    func update(_ change: (inout Double) -> Void) {
        var seen = bits.load(ordering: .relaxed)
        while true {
            var value = Double(bitPattern: seen)
            change(&value)
            let (exchanged, original) = bits.compareExchange(expected: seen, desired: value.bitPattern, ordering: .relaxed)
            if exchanged { return }
            seen = original
        }
    }
}

/// One label set of a histogram: its bucket counts, sum and count behind its own lock.
/// Resolved once and kept by hot paths, as `ValueSeries` is (`Histogram.series`).
public final class HistogramSeries: Sendable {
    struct Counts {
        var bucketCounts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    /// The histogram's upper bounds, sorted; the last bucket (+Inf) has no bound here.
    private let bounds: [Double]
    private let counts: Mutex<Counts>

    init(bounds: [Double]) {
        self.bounds = bounds
        counts = Mutex(Counts(bucketCounts: Array(repeating: 0, count: bounds.count + 1)))
    }

    public func observe(_ value: Double) {
        let index = bounds.firstIndex { value <= $0 } ?? bounds.count
        counts.withLock { counts in
            counts.bucketCounts[index] += 1
            counts.sum += value
            counts.count += 1
        }
    }

    /// Observes the seconds elapsed since `start`.
    ///
    /// From the attoseconds, in 64 bits when they fit (under 18 s: nearly every observation),
    /// not through `components`, whose 128-bit division by 10^18 ran twice per observation,
    /// nor the generic conversion of a 128-bit integer to `Double` (callgrind: 745, then 392
    /// instructions per delivery for its two observations).
    public func observe(since start: ContinuousClock.Instant) {
        let attoseconds = (ContinuousClock.now - start).attoseconds
        if let small = UInt64(exactly: attoseconds) {
            observe(Double(small) / 1e18)
        } else {
            observe(Double(attoseconds) / 1e18)
        }
    }

    var snapshot: Counts { counts.withLock { $0 } }
}

/// The series of one metric by label set, created on first use.
struct SeriesTable<Series: AnyObject & Sendable>: ~Copyable, Sendable {
    private let all = Mutex<[LabelSet: Series]>([:])

    func series(_ key: LabelSet, orMake make: () -> Series) -> Series {
        all.withLock { all in
            if let existing = all[key] { return existing }
            let created = make()
            all[key] = created
            return created
        }
    }

    func existing(_ key: LabelSet) -> Series? { all.withLock { $0[key] } }
    var snapshot: [LabelSet: Series] { all.withLock { $0 } }
}
