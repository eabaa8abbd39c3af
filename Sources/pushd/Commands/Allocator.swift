import CJemalloc

/// Which `malloc` this process runs on, for the worker's start-up log: the executable links
/// jemalloc (`CJemalloc` says why and with which settings).
enum Allocator {
    /// "jemalloc 5.3.0-…, narenas 1, dirty_decay_ms 1000"; nil when jemalloc does not serve
    /// `malloc`.
    private static let jemalloc: String? = {
        var buffer = [CChar](repeating: 0, count: 160)
        guard pushd_jemalloc_describe(&buffer, buffer.count) == 1 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    static var name: String { jemalloc ?? "glibc malloc" }
    static var isJemalloc: Bool { jemalloc != nil }
}
