import Foundation
import PushRuntime

/// A worker started under `PUSHD_BENCH_WORKER_WRAPPER` may be the wrapper's child rather than
/// the wrapper itself: `valgrind` runs pushd in its own process, `perf record -- pushd worker`
/// forks it. The figures are the pushd process's, and the stop signal must reach it: `perf
/// record` holds SIGTERM blocked while it waits, so signalling only the wrapper left the
/// worker running and the benchmark waiting for it forever.
enum WrappedWorker {
    /// The process running `executable` at or under `pid`: the first descendant with its
    /// name (breadth first; the kernel keeps `ThreadName.maximumBytes` of it), else `pid`
    /// itself. By the executable's own name, not "pushd": a copy of another build
    /// (`PUSHD_BINARY=/tmp/pushd-old`) under `perf record` was otherwise never found, and
    /// the figures were perf's.
    static func workerProcess(under pid: Int32, executable: URL) -> Int32 {
        let name = String(decoding: Array(executable.lastPathComponent.utf8.prefix(ThreadName.maximumBytes)), as: UTF8.self)
        return descendants(of: pid).first { processName($0) == name } ?? pid
    }

    /// Asks the worker to stop (SIGTERM, a graceful drain), its descendants first, then the
    /// process that was started.
    static func terminate(_ process: Process) {
        for child in descendants(of: process.processIdentifier) { kill(child, SIGTERM) }
        process.terminate()
    }

    /// `pid`'s descendants, breadth first, from `/proc/<pid>/task/*/children`.
    static func descendants(of pid: Int32) -> [Int32] {
        var found: [Int32] = []
        var next = [pid]
        while let parent = next.first {
            next.removeFirst()
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(parent)/task")) ?? []
            for task in tasks {
                let text = (try? String(contentsOfFile: "/proc/\(parent)/task/\(task)/children", encoding: .utf8)) ?? ""
                let children = text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                found.append(contentsOf: children)
                next.append(contentsOf: children)
            }
        }
        return found
    }

    private static func processName(_ pid: Int32) -> String? {
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
