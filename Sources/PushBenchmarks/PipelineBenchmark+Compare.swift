import Foundation
import PushCommandLine

extension PipelineBenchmark {
    /// Backlog drains alternating between this build's worker and `baseline`'s, `rounds`
    /// of each (by `workers` workers at once), with the median CPU per delivery of both.
    ///
    /// On this shared VM the same binary's drains differ by up to 15%, run to run, so a
    /// change is only seen against a baseline measured in the same stretch of time. The
    /// first of each round alternates, so a neighbour's load that rises or falls during the
    /// run favours neither.
    static func compare(_ bench: PipelineRun, baseline: URL, rounds: Int, backlog: Int, workers: Int = 1) async throws {
        let current = bench.workerExecutable
        defer { bench.workerExecutable = current }
        var thisCPU: [Double] = [], baselineCPU: [Double] = []
        for round in 1...max(1, rounds) {
            for isBaseline in round % 2 == 1 ? [false, true] : [true, false] {
                bench.workerExecutable = isBaseline ? baseline : current
                let drained = try await bench.throughput(deliveries: backlog, workers: workers)
                write(isBaseline ? "baseline" : "this    ", drained, note: "round \(round) of \(rounds), \(backlog)-delivery backlog" + (workers == 1 ? "" : ", \(workers) workers"))
                if isBaseline { baselineCPU.append(drained.cpuMicrosecondsPerDelivery) } else { thisCPU.append(drained.cpuMicrosecondsPerDelivery) }
            }
        }
        let this = median(thisCPU), base = median(baselineCPU)
        StandardStreams.write(line: String(
            format: "  CPU per delivery, median of %d: this %.1f µs, baseline %.1f µs (this / baseline = %.3f)",
            max(1, rounds), this, base, this / max(base, 0.001)))
    }

    /// The middle value (the mean of the middle two for an even count); 0 for none.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
