import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Names the calling OS thread, so `top -H`, `perf`, `gdb` and `/proc/<pid>/task/*/comm` tell
/// a worker's threads apart (the HTTP/2 loops, the database connections, the AMQP
/// connections), and the pipeline benchmark can split a worker's CPU by thread.
///
/// Foundation's `Thread.name` is not enough on Linux: set before `start()`, it never reaches
/// the kernel, and every dedicated thread kept the name of the pool thread that started it.
/// So each thread names itself first thing: `startThread(named:_:)` starts one that does. On Linux through
/// `/proc/thread-self/comm` (proc(5)): glibc's `pthread_setname_np` needs `_GNU_SOURCE` and
/// `prctl` is variadic, so neither imports into Swift.
public enum ThreadName {
    /// Linux keeps 15 bytes of a thread's name (16 with the terminating NUL).
    public static let maximumBytes = 15

    /// Starts a thread that runs `body` under `name`: Foundation's `Thread.name`, and the OS
    /// name, which the thread sets itself before anything else.
    public static func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            setCurrent(name)
            body()
        }
        thread.name = name
        thread.start()
    }

    /// Sets the calling thread's name, cut to `maximumBytes` (the names we give are ASCII).
    /// Best effort: a system without `/proc` keeps the old name.
    public static func setCurrent(_ name: String) {
        let kept = Array(name.utf8.prefix(maximumBytes))
        #if os(Linux)
        let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard file >= 0 else { return }
        defer { close(file) }
        _ = kept.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        #elseif canImport(Darwin)
        _ = pthread_setname_np(String(decoding: kept, as: UTF8.self))
        #endif
    }

    /// The calling thread's name as the kernel has it, or nil where it cannot be read.
    public static var current: String? {
        #if os(Linux)
        let file = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var buffer = [UInt8](repeating: 0, count: maximumBytes + 2)
        let count = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).prefix { $0 != 0x0A }, as: UTF8.self)
        #elseif canImport(Darwin)
        var buffer = [CChar](repeating: 0, count: 64)
        guard pthread_getname_np(pthread_self(), &buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #else
        return nil
        #endif
    }
}
