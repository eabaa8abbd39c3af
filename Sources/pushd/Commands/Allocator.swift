import CJemalloc

/// Which `malloc` this process runs on, for the worker's start-up log: the executable links
/// jemalloc (`CJemalloc` says why and with which settings).
enum Allocator {
    /// "jemalloc 5.3.0-…, narenas 1, dirty_decay_ms 1000", or "glibc malloc" when jemalloc
    /// does not serve `malloc`.
    static let name: String = {
        var buffer = [CChar](repeating: 0, count: 160)
        guard pushd_jemalloc_describe(&buffer, buffer.count) == 1 else { return "glibc malloc" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    static var isJemalloc: Bool { name.hasPrefix("jemalloc ") }
}
