import PushCommandLine

extension PipelineBenchmark {
    /// One throughput row of the full run: several drains of the same kind, each set against
    /// the envelope measured around it (`PipelineRun.withEnvelope`). On this shared VM one
    /// drain's ratio moves by ±0.3 with the second it ran in, so a row read from one drain
    /// passed or failed on that second; the median drain is what the row reports.
    struct Row {
        /// A drain's figures and the envelope's CPU measured around it.
        typealias Drain = (figures: DrainFigures, envelope: Double)

        let drains: [Drain]

        /// A drain's CPU per delivery over the envelope's CPU around it.
        static func ratio(_ drain: Drain) -> Double {
            drain.figures.cpuMicrosecondsPerDelivery / drain.envelope
        }

        /// The drain with the median ratio, the upper of the two middle ones for an even
        /// count (the one that reads worse), so a row is never judged by its luckier half.
        /// Its rate and CPU are the row's. A `nan` ratio (no envelope sealed) sorts last.
        var median: Drain {
            let sorted = drains.sorted { first, second in
                let (a, b) = (Self.ratio(first), Self.ratio(second))
                return a.isNaN ? false : b.isNaN ? true : a < b
            }
            return sorted[sorted.count / 2]
        }

        /// The ratios in the order the drains ran, e.g. "2.02, 2.05, 1.98".
        var ratios: String {
            drains.map { String(format: "%.2f", Self.ratio($0)) }.joined(separator: ", ")
        }

        /// The highest peak resident memory of any of the row's drains.
        var peakMiB: Double { drains.map(\.figures.peakMiB).max() ?? 0 }
    }

    /// Runs `count` drains (at least one), writing each as it ends with `label` and `note`.
    static func row(
        _ label: String, note: String, count: Int, bench: PipelineRun, _ drain: () async throws -> DrainFigures
    ) async throws -> Row {
        var drains: [Row.Drain] = []
        let count = max(1, count)
        for index in 1...count {
            let (figures, envelope) = try await bench.withEnvelope(drain)
            write(label, figures, note: count == 1 ? note : "\(note); drain \(index) of \(count)")
            drains.append((figures, envelope))
        }
        return Row(drains: drains)
    }
}
