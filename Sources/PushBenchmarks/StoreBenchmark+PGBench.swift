import Foundation
import PushStore

extension StoreBenchmark {
    /// PostgreSQL's own figure for the simplest indexed read: `pgbench -S` (one primary-key
    /// select per transaction) in a scratch database initialised with `pgbench -i` and
    /// dropped afterwards, with as many clients as we use connections. Run with the extended
    /// protocol (what we use: parse, bind, execute per statement) and with prepared
    /// statements (its best case).
    enum PGBench {
        static func compare(pool: ConnectionPool, run: String, seconds: Double, clients: Int) async -> [String] {
            guard let pgbench = locate() else {
                return ["  pgbench                            : not found (install postgresql-client or set PUSHD_PG_BIN)"]
            }
            let name = "pushd_bench_\(run)"
            let database: SQLIdentifier
            do {
                database = try SQLIdentifier(name)
                _ = try await pool.query("CREATE DATABASE \(identifier: database)")
            } catch {
                return ["  pgbench                            : cannot create scratch database \(name): \(error)"]
            }
            let (connection, password) = pool.configuration.withDatabase(name).toolConnection()
            var environment = ProcessInfo.processInfo.environment
            if let password { environment["PGPASSWORD"] = password }
            var lines: [String] = []
            let initialise = await runTool(pgbench, ["-i", "-s", "1", "-q", connection], environment: environment)
            if initialise.status != 0 {
                lines.append("  pgbench -i failed: \(initialise.errors.trimmingCharacters(in: .whitespacesAndNewlines))")
            } else {
                let threads = min(clients, ProcessInfo.processInfo.activeProcessorCount)
                for mode in ["extended", "prepared"] {
                    let result = await runTool(
                        pgbench,
                        ["-S", "-n", "-M", mode, "-c", String(clients), "-j", String(threads), "-T", String(max(1, Int(seconds.rounded()))), connection],
                        environment: environment)
                    if let tps = parseTPS(result.output), result.status == 0 {
                        let padded = mode.padding(toLength: 8, withPad: " ", startingAt: 0)
                        lines.append(String(format: "  pgbench -S -M %@, %d clients  : %10.0f rows/s      (1 row per transaction)", padded, clients, tps))
                    } else {
                        lines.append("  pgbench -S -M \(mode) failed: \(result.errors.trimmingCharacters(in: .whitespacesAndNewlines))")
                    }
                }
            }
            do {
                _ = try await pool.query("DROP DATABASE IF EXISTS \(identifier: database) WITH (FORCE)")
            } catch {
                lines.append("  warning: could not drop scratch database \(name): \(error)")
            }
            return lines
        }

        /// `PUSHD_PG_BIN/pgbench`, else the newest `/usr/lib/postgresql/*/bin/pgbench`, else PATH.
        static func locate() -> String? {
            let environment = ProcessInfo.processInfo.environment
            var candidates: [String] = []
            if let bin = environment["PUSHD_PG_BIN"] { candidates.append("\(bin)/pgbench") }
            let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
            for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
                candidates.append("/usr/lib/postgresql/\(version)/bin/pgbench")
            }
            for directory in (environment["PATH"] ?? "").split(separator: ":") {
                candidates.append("\(directory)/pgbench")
            }
            return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
        }

        /// `tps = 12345.678901 (without initial connection time)`.
        static func parseTPS(_ output: String) -> Double? {
            for line in output.split(separator: "\n") where line.hasPrefix("tps = ") {
                let number = line.dropFirst(6).prefix { $0.isNumber || $0 == "." }
                return Double(number)
            }
            return nil
        }

        /// Runs a tool to completion on a thread of its own (never on the cooperative pool),
        /// its output in temporary files so it can never block on a full pipe.
        ///
        /// The thread first unblocks all signals: a child inherits its parent thread's signal
        /// mask, and Swift's worker threads block signals, which leaves `pgbench -T` (it ends
        /// on SIGALRM) running forever.
        static func runTool(_ path: String, _ arguments: [String], environment: [String: String]) async -> (status: Int32, output: String, errors: String) {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    var none = sigset_t()
                    sigemptyset(&none)
                    pthread_sigmask(SIG_SETMASK, &none, nil)
                    let directory = FileManager.default.temporaryDirectory
                    let outputURL = directory.appendingPathComponent("pushd-pgbench-\(UUID().uuidString).out")
                    let errorURL = directory.appendingPathComponent("pushd-pgbench-\(UUID().uuidString).err")
                    defer {
                        try? FileManager.default.removeItem(at: outputURL)
                        try? FileManager.default.removeItem(at: errorURL)
                    }
                    _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
                    _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: path)
                    process.arguments = arguments
                    process.environment = environment
                    do {
                        process.standardOutput = try FileHandle(forWritingTo: outputURL)
                        process.standardError = try FileHandle(forWritingTo: errorURL)
                        process.standardInput = FileHandle.nullDevice
                        try process.run()
                    } catch {
                        continuation.resume(returning: (127, "", "cannot run \(path): \(error)"))
                        return
                    }
                    process.waitUntilExit()
                    let output = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
                    let errors = (try? String(contentsOf: errorURL, encoding: .utf8)) ?? ""
                    continuation.resume(returning: (process.terminationStatus, output, errors))
                }
            }
        }
    }
}
