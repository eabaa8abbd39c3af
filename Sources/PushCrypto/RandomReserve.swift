import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Output of OpenSSL's CSPRNG (`RAND_bytes`), fetched for `drawsPerRefill` envelopes in one
/// call and handed out `drawLength` bytes at a time, each byte exactly once.
///
/// Why: a `RAND_bytes` call costs about 1.7 µs whatever its length (OpenSSL 3 rekeys the
/// CTR-DRBG through the provider layer and asks the kernel for the pid on every call), the
/// largest cost of an envelope after the RSA operation itself; one call for 32 envelopes
/// brings it to about 0.1 µs each.
///
/// Why this is as safe as one `RAND_bytes` call per envelope:
/// - Same generator, same bytes: every key, nonce and seed is CSPRNG output that no other
///   envelope ever sees (the cursor only moves forward; a refill overwrites the page).
/// - Nothing outlives its envelope: `draw` wipes the bytes it hands out from the page at
///   once, so after sealing the content key exists nowhere, exactly as before.
/// - Bytes not handed out yet are future generator output, which the DRBG state OpenSSL
///   keeps in the same process memory already determines until its next reseed: holding at
///   most 32 draws reveals nothing more to someone who can read our memory. They are also
///   kept out of core dumps (`MADV_DONTDUMP`), and dropped after `maximumAgeNanoseconds` (shorter than
///   OpenSSL's 7-minute reseed interval) so an idle reserve does not hold them for long.
/// - Fork: the page is `MADV_WIPEONFORK`, so a child process (however it forked: `fork`,
///   `_Fork` or a raw `clone`) sees it zeroed, finds no `filledMarker` and refills from its
///   own generator, which OpenSSL reseeds after a fork. Parent and child can never seal
///   with the same key and nonce.
///
/// When the kernel refuses either advice (before Linux 4.14), `make()` returns nil and the
/// caller falls back to one `RAND_bytes` call per envelope.
///
/// Not thread-safe: one owner at a time (it lives in a pooled `SealingContext`).
final class RandomReserve {
    /// What one envelope draws: its content key ‖ nonce ‖ OAEP seed (`SealingContext.Draw`).
    static let drawLength = SealingContext.Draw.length
    static let drawsPerRefill = 32
    /// Unused bytes older than this are thrown away rather than handed out.
    static let maximumAgeNanoseconds: UInt64 = 60_000_000_000

    /// One page: `filledMarker` at offset 0, the set-aside flag at 8, the set-aside draw at
    /// `setAsideOffset`, the random bytes from `bytesOffset`.
    private let page: UnsafeMutableRawPointer
    private let pageSize: Int
    private static let setAsideFlagOffset = 8
    private static let setAsideOffset = 16
    private static let bytesOffset = 128
    private static let capacity = drawLength * drawsPerRefill
    /// A non-zero word written at each refill; zero means "never filled in this process".
    private static let filledMarker: UInt64 = 0x7075_7368_6420_7276  // "pushd rv"
    private var cursor = capacity
    private var filledAt: UInt64 = 0
    private var setAsideAt: UInt64 = 0

    private init(page: UnsafeMutableRawPointer, pageSize: Int) {
        self.page = page
        self.pageSize = pageSize
    }

    /// A reserve on its own wipe-on-fork, not-dumped page, or nil when the system cannot
    /// give that guarantee.
    static func make() -> RandomReserve? {
        #if os(Linux)
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard pageSize >= bytesOffset + capacity, setAsideOffset + drawLength <= bytesOffset else { return nil }
        guard let page = mmap(nil, pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              page != MAP_FAILED
        else { return nil }
        guard madvise(page, pageSize, MADV_WIPEONFORK) == 0, madvise(page, pageSize, MADV_DONTDUMP) == 0 else {
            munmap(page, pageSize)
            return nil
        }
        return RandomReserve(page: page, pageSize: pageSize)
        #else
        return nil
        #endif
    }

    deinit {
        OPENSSL_cleanse(page, pageSize)
        munmap(page, pageSize)
    }

    /// Writes the next `drawLength` unused bytes to `destination` and wipes them here.
    func draw(into destination: UnsafeMutableRawBufferPointer) throws(SealError) {
        precondition(destination.count == Self.drawLength)
        let now = Self.monotonicNanoseconds()
        if cursor == Self.capacity || !isFilled || now &- filledAt > Self.maximumAgeNanoseconds {
            try refill(at: now)
        }
        let source = page + Self.bytesOffset + cursor
        destination.baseAddress?.copyMemory(from: source, byteCount: Self.drawLength)
        OPENSSL_cleanse(source, Self.drawLength)
        cursor += Self.drawLength
    }

    /// Moves the next draw to the set-aside slot and returns it, for a caller that uses it
    /// ahead of time (loading the next envelope's key into a cipher context). The slot is on
    /// the same page, so it is wiped on fork and kept out of core dumps like the rest.
    func setAside() throws(SealError) -> UnsafeRawBufferPointer {
        let slot = UnsafeMutableRawBufferPointer(start: page + Self.setAsideOffset, count: Self.drawLength)
        try draw(into: slot)
        page.storeBytes(of: Self.filledMarker, toByteOffset: Self.setAsideFlagOffset, as: UInt64.self)
        setAsideAt = Self.monotonicNanoseconds()
        return UnsafeRawBufferPointer(slot)
    }

    /// Copies the set-aside draw to `destination` and wipes the slot. False, with the slot
    /// wiped, when there is none to use: never set aside, already taken, this is a forked
    /// child (the kernel zeroed the flag), or it is older than `maximumAgeNanoseconds`.
    func takeSetAside(into destination: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(destination.count == Self.drawLength)
        let slot = page + Self.setAsideOffset
        defer {
            OPENSSL_cleanse(slot, Self.drawLength)
            page.storeBytes(of: 0, toByteOffset: Self.setAsideFlagOffset, as: UInt64.self)
        }
        guard page.load(fromByteOffset: Self.setAsideFlagOffset, as: UInt64.self) == Self.filledMarker,
              Self.monotonicNanoseconds() &- setAsideAt <= Self.maximumAgeNanoseconds
        else { return false }
        destination.baseAddress?.copyMemory(from: slot, byteCount: Self.drawLength)
        return true
    }

    /// Whether the page holds bytes filled by this process (false in a forked child, whose
    /// copy of the page the kernel zeroed).
    var isFilled: Bool { page.load(as: UInt64.self) == Self.filledMarker }

    private func refill(at now: UInt64) throws(SealError) {
        guard RAND_bytes((page + Self.bytesOffset).assumingMemoryBound(to: UInt8.self), Int32(Self.capacity)) == 1 else {
            OPENSSL_cleanse(page + Self.bytesOffset, Self.capacity)
            cursor = Self.capacity
            throw .openSSL(OpenSSLErrorQueue.drain(or: "the random generator failed"))
        }
        page.storeBytes(of: Self.filledMarker, as: UInt64.self)
        cursor = 0
        filledAt = now
    }

    /// The coarse monotonic clock: a few nanoseconds through the vDSO, and its resolution
    /// (a few milliseconds) is ample for a one-minute limit.
    private static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        #else
        clock_gettime(CLOCK_MONOTONIC, &time)
        #endif
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
