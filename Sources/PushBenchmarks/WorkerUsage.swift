import Foundation

/// What a worker process has cost so far, read while it still runs: CPU time (user +
/// system, what `getrusage` would report, from the process's CPU clock) and peak resident
/// memory (from `/proc`).
struct WorkerUsage {
    var cpuSeconds: Double
    var peakBytes: Int
    /// The CPU time of the threads still running, by what they do (their names, see
    /// `ThreadName`); a thread that has exited is in `cpuSeconds` only. Both in nanoseconds
    /// (`cpuSeconds` in clock ticks only where the process's CPU clock cannot be read).
    var cpuSecondsByRole: [ThreadRole: Double] = [:]

    /// What a worker thread does, told by its OS name.
    enum ThreadRole: CaseIterable {
        /// Swift's cooperative pool: sealing and the job's own work (everything unnamed).
        case taskPool
        /// `pushd-h2-*`: the HTTP/2 loops (nghttp2, TLS, the sockets).
        case http2
        /// `pushd-pg-*`: the PostgreSQL connections.
        case database
        /// `pushd-amqp-*`: the RabbitMQ connections.
        case broker
        /// The main thread, metrics, DNS.
        case other

        init(threadName name: String) {
            if name.hasPrefix("pushd-h2") {
                self = .http2
            } else if name.hasPrefix("pushd-pg") {
                self = .database
            } else if name.hasPrefix("pushd-amqp") {
                self = .broker
            } else if name.hasPrefix("pushd") {
                self = .other
            } else {
                self = .taskPool
            }
        }

        var label: String {
            switch self {
            case .taskPool: "task pool"
            case .http2: "HTTP/2 loops"
            case .database: "database"
            case .broker: "broker"
            case .other: "other"
            }
        }
    }

    /// Nil when the process is gone or `/proc` is not Linux's.
    static func read(pid: Int32) -> WorkerUsage? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let cpu = cpuTicks(stat: stat)
        else { return nil }
        let ticksPerSecond = max(Double(sysconf(Int32(_SC_CLK_TCK))), 1)
        var byRole: [ThreadRole: Double] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            let directory = "/proc/\(pid)/task/\(task)"
            guard let name = try? String(contentsOfFile: "\(directory)/comm", encoding: .utf8) else { continue }
            // schedstat's first field is the thread's time on a CPU in nanoseconds: a thread
            // that used 3 ms over a short drain shows as 3 ms, not as 0 or 10 ms in clock ticks.
            let seconds: Double
            if let schedstat = try? String(contentsOfFile: "\(directory)/schedstat", encoding: .utf8),
               let nanoseconds = schedstat.split(separator: " ").first.flatMap({ Double($0) }) {
                seconds = nanoseconds / 1e9
            } else if let stat = try? String(contentsOfFile: "\(directory)/stat", encoding: .utf8), let ticks = cpuTicks(stat: stat) {
                seconds = Double(ticks) / ticksPerSecond
            } else {
                continue
            }
            // The main thread (its id is the process's) bears the executable's name, which is
            // not "pushd" for a copy of another build (`PUSHD_BINARY=/tmp/old`).
            let role = task == "\(pid)" ? .other : ThreadRole(threadName: name.trimmingCharacters(in: .whitespacesAndNewlines))
            byRole[role, default: 0] += seconds
        }
        return WorkerUsage(
            cpuSeconds: processCPUSeconds(pid: pid) ?? Double(cpu) / ticksPerSecond,
            peakBytes: peakKilobytes(status: status) * 1024, cpuSecondsByRole: byRole)
    }

    /// The process's CPU clock (`clock_getcpuclockid`), in nanoseconds: what the kernel
    /// counts for every thread it ever ran, exited ones included. `/proc/<pid>/stat` shows the
    /// same time truncated to clock ticks, user and system each: up to 20 ms short per
    /// worker, which on a 20,000-delivery drain of two workers read up to 2 µs a delivery
    /// low. Nil where the clock cannot be read (then the ticks stand in).
    static func processCPUSeconds(pid: Int32) -> Double? {
        var clock = clockid_t()
        guard clock_getcpuclockid(pid, &clock) == 0 else { return nil }
        return cpuClockSeconds(clock)
    }

    /// A CPU clock's reading (`clock_gettime`), in seconds: a process's, or the calling
    /// thread's (`CLOCK_THREAD_CPUTIME_ID`, the envelope yardstick's). Nil where it cannot be read.
    static func cpuClockSeconds(_ clock: clockid_t) -> Double? {
        var time = timespec()
        guard clock_gettime(clock, &time) == 0 else { return nil }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
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
            peakBytes: usages.map(\.peakBytes).max() ?? 0,
            cpuSecondsByRole: usages.reduce(into: [:]) { total, usage in total.merge(usage.cpuSecondsByRole, uniquingKeysWith: +) })
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

    /// The CPU per delivery split by thread, e.g. "task pool 40.2, HTTP/2 loops 13.1, ...";
    /// a thread that exited (a DNS lookup's) counts as "exited".
    var cpuPerDeliveryByThread: String {
        let perDelivery = 1e6 / Double(max(deliveries, 1))
        var parts = WorkerUsage.ThreadRole.allCases.map { role in
            role.label + String(format: " %.1f", (usage.cpuSecondsByRole[role] ?? 0) * perDelivery)
        }
        let listed = usage.cpuSecondsByRole.values.reduce(0, +)
        parts.append(String(format: "exited %.1f", max(0, usage.cpuSeconds - listed) * perDelivery))
        return parts.joined(separator: ", ") + " µs"
    }
    var emulatorMicrosecondsPerPush: Double { emulatorCPUSeconds * 1e6 / Double(max(deliveries, 1)) }
    var peakMiB: Double { Double(usage.peakBytes) / 1_048_576 }
}
