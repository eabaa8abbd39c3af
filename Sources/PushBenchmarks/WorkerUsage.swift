import Foundation

/// What a worker process has cost so far, read from its own `/proc` entries while it still
/// runs: CPU time (user + system, what `getrusage` would report) and peak resident memory.
struct WorkerUsage {
    var cpuSeconds: Double
    var peakBytes: Int

    /// Nil when the process is gone or `/proc` is not Linux's.
    static func read(pid: Int32) -> WorkerUsage? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let cpu = cpuTicks(stat: stat)
        else { return nil }
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        return WorkerUsage(cpuSeconds: Double(cpu) / max(ticksPerSecond, 1), peakBytes: peakKilobytes(status: status) * 1024)
    }

    /// utime + stime (fields 14 and 15 of `/proc/<pid>/stat`), counted after the command
    /// name, which is in parentheses and may itself hold spaces.
    static func cpuTicks(stat: String) -> Int? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// `VmHWM` of `/proc/<pid>/status`, in KiB.
    static func peakKilobytes(status: String) -> Int {
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// The sum over several workers (peak: the largest one).
    static func total(_ usages: [WorkerUsage]) -> WorkerUsage {
        WorkerUsage(
            cpuSeconds: usages.reduce(0) { $0 + $1.cpuSeconds },
            peakBytes: usages.map(\.peakBytes).max() ?? 0)
    }
}

/// One measured drain: deliveries per second and what the workers spent on it.
struct DrainFigures {
    var deliveries: Int
    var rate: Double
    var usage: WorkerUsage
    /// The emulator's CPU over the drain (all its processes, from its `/stats`): on these
    /// shared cores, what the other end of every push cost.
    var emulatorCPUSeconds: Double

    var cpuMicrosecondsPerDelivery: Double { usage.cpuSeconds * 1e6 / Double(max(deliveries, 1)) }
    var emulatorMicrosecondsPerPush: Double { emulatorCPUSeconds * 1e6 / Double(max(deliveries, 1)) }
    var peakMiB: Double { Double(usage.peakBytes) / 1_048_576 }
}
