import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starts programs for tests the way a careful supervisor would, with `posix_spawn`:
///
/// - input from a file or /dev/null, output into files, never pipes: any daemon started at
///   the same moment by another suite inherits every descriptor that is not close-on-exec
///   and would hold a pipe open for as long as it runs, leaving its reader waiting forever;
/// - every other descriptor closed in the child (`closefrom(3)`);
/// - an empty signal mask and default dispositions: Swift's worker threads block signals
///   and children inherit the mask, so a child could otherwise never be stopped by SIGTERM
///   or notice its own children exiting;
/// - optionally its own process group, so signalling it cannot reach the test process.
public enum Spawn {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// Starts `executable` (a path, or a name looked up on PATH) and returns its pid.
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        input: String? = nil, output: String, errors: String? = nil, newProcessGroup: Bool = false
    ) throws -> pid_t {
        let path = try resolve(executable)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        if let errors {
            posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        closeInheritedDescriptors(&actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let merged = environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } } ?? ProcessInfo.processInfo.environment
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard status == 0 else { throw Failure(description: "cannot start \(path): \(String(cString: strerror(status)))") }
        return pid
    }

    /// Blocks until `pid` exits and returns its exit status (128 + signal if killed).
    public static func waitBlocking(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        return exitStatus(status)
    }

    /// The exit status if `pid` has exited (reaping it), nil if it still runs.
    public static func poll(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid { return exitStatus(status) }
        if result < 0 && errno == ECHILD { return -1 }
        return nil
    }

    /// WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
    static func exitStatus(_ status: Int32) -> Int32 {
        (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    static func resolve(_ executable: String) throws -> String {
        if executable.contains("/") { return executable }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(executable)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw Failure(description: "\(executable) is not on PATH")
    }

    /// `posix_spawn_file_actions_addclosefrom_np(actions, 3)` (glibc 2.34+), looked up at run
    /// time because Swift's Glibc module does not export GNU extensions; failing that, closes
    /// every descriptor open now.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            let addCloseFrom = unsafeBitCast(symbol, to: AddCloseFrom.self)
            if addCloseFrom(&actions, 3) == 0 { return }
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap(Int32.init) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }
}

/// A long-running child (an emulator, a worker, a server) with its output in a log file.
public final class SpawnedProcess: Sendable {
    public let pid: pid_t
    public let logFile: URL
    private let exitStatus = NSLockedValue<Int32?>(nil)

    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, logFile: URL,
        newProcessGroup: Bool = true
    ) throws {
        self.logFile = logFile
        pid = try Spawn.start(
            executable, arguments, environment: environment, output: logFile.path, newProcessGroup: newProcessGroup)
    }

    /// Takes over a child started with `Spawn.start`.
    public init(adopting pid: pid_t, logFile: URL) {
        self.pid = pid
        self.logFile = logFile
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            _ = Spawn.waitBlocking(pid)
        }
    }

    public var isRunning: Bool {
        if exitStatus.get() != nil { return false }
        guard let status = Spawn.poll(pid) else { return true }
        exitStatus.set(status)
        return false
    }

    /// The exit status once it has exited.
    public var status: Int32? {
        _ = isRunning
        return exitStatus.get()
    }

    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    public func signal(_ number: Int32) {
        if isRunning { kill(pid, number) }
    }

    /// Waits up to `timeout` for it to exit; returns its status, or nil if still running.
    public func wait(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return status
    }

    /// SIGTERM, then SIGKILL after `timeout`; returns the exit status, or nil if it had to
    /// be killed.
    public func terminate(timeout: Duration) async -> Int32? {
        signal(SIGTERM)
        if let status = await wait(timeout: timeout) { return status }
        kill9()
        return nil
    }

    public func kill9() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        exitStatus.set(Spawn.waitBlocking(pid))
    }
}
