#if canImport(Glibc)
import Glibc
#endif

/// Which `malloc` this process runs on, for start-up logs and benchmark headers: the
/// `pushd` executable links jemalloc (its `CJemalloc` target says why), while programs
/// that only use the libraries keep whatever they link.
///
/// Found at run time (`mallctl` is jemalloc's own entry point), so no module but the
/// executable depends on jemalloc.
public enum Allocator {
    /// "jemalloc 5.3.0-0-g…", or "glibc malloc" when jemalloc did not take `malloc`.
    public static let name: String = {
        #if canImport(Glibc)
        typealias Mallctl = @convention(c) (
            UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int
        ) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallctl") {
            let mallctl = unsafeBitCast(symbol, to: Mallctl.self)
            var version: UnsafePointer<CChar>?
            var length = MemoryLayout<UnsafePointer<CChar>?>.size
            if mallctl("version", &version, &length, nil, 0) == 0, let version {
                return "jemalloc " + String(cString: version)
            }
        }
        return "glibc malloc"
        #else
        return "system malloc"
        #endif
    }()

    /// Whether `malloc` is jemalloc's.
    public static var isJemalloc: Bool { name.hasPrefix("jemalloc") }
}
