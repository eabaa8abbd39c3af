import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the process runs on glibc's malloc after all (jemalloc, which the executable links,
/// did not take `malloc`): caps glibc's arenas at one per core (at least two), unless
/// `MALLOC_ARENA_MAX` is set. glibc's default is eight per core: every thread that meets a
/// locked arena gets a new one, and the memory freed into each arena stays with it. A worker's
/// threads (the cooperative pool, one HTTP/2 loop per client, the AMQP and PostgreSQL threads)
/// each allocate and free per delivery, so its resident memory grew with the arenas, not with
/// the work: draining a 100,000-delivery backlog peaked at 59.6–66.2 MiB with the default and
/// at 56.4–59.2 MiB with two arenas on two cores, at the same CPU per delivery.
enum MallocArenas {
    /// `M_ARENA_MAX` of `<malloc.h>`, which Swift's Glibc module does not bring in.
    private static let arenaMaximum: Int32 = -8

    static func capAtCoreCount() {
        #if canImport(Glibc)
        guard getenv("MALLOC_ARENA_MAX") == nil else { return }
        // `mallopt` is declared in <malloc.h>, outside Swift's Glibc module: looked up instead.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        _ = mallopt(arenaMaximum, Int32(clamping: max(2, ProcessInfo.processInfo.activeProcessorCount)))
        #endif
    }
}
