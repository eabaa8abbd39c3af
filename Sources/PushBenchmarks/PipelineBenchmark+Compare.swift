import Foundation
import PushCommandLine

extension PipelineBenchmark {
    /// Backlog drains alternating between this build's worker and `baseline`'s, `rounds`
    /// of each, with the median CPU per delivery of both.
    ///
    /// On this shared VM the same binary's drains differ by up to 15%, run to run, so a
    /// change is only seen against a baseline measured in the same stretch of time. The
    /// first of each round alternates, so a neighbour's load that rises or falls during the
    /// run favours neither.
    static func compare(_ bench: PipelineRun, baseline: URL, rounds: Int, backlog: Int) async throws {
        let current = bench.workerExecutable
        defer { bench.workerExecutable = current }
        var cpu: [String: [Double]] = [:]
        for round in 1...max(1, rounds) {
            let both = [("this    ", current), ("baseline", baseline)]
            for (label, executable) in round % 2 == 1 ? both : both.reversed() {
                bench.workerExecutable = executable
                let drained = try await bench.peakMemory(backlog: backlog)
                write(label, drained, note: "round \(round) of \(rounds), \(backlog)-delivery backlog")
                cpu[label, default: []].append(drained.cpuMicrosecondsPerDelivery)
            }
        }
        let this = median(cpu["this    "] ?? []), base = median(cpu["baseline"] ?? [])
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
