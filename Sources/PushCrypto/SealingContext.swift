import COpenSSL
import Synchronization

/// What sealing one envelope needs besides the recipient's key, reused across envelopes:
/// an `EVP_CIPHER_CTX` already bound to AES-256-GCM (making one allocates provider state),
/// scratch memory, and a `RandomReserve` for the envelope's draw:
/// content key ‖ nonce ‖ OAEP seed (`Draw`).
///
/// A pooled context is never left holding the key of an envelope already sealed. When it
/// is given back, it is loaded at once with the key and nonce of the *next* envelope it
/// will seal (drawn now, set aside on the reserve's page), so that sealing starts with the
/// context ready; where there is no reserve, it gets the all-zero key instead.
///
/// Why loading the next key is equivalent to loading the all-zero key: what blanking
/// guarantees is that no sealed envelope's key (or its key schedule, from which the key
/// follows) survives the envelope; here too the sealed key's schedule is overwritten before
/// the context is pooled, and the copies of the key are wiped (scratch by the sealer, the
/// set-aside slot when taken). What the context holds instead is a key no envelope has used
/// yet, which is the exposure `RandomReserve` already argues is none (future output the DRBG
/// state in the same memory determines), and it is never used twice: `begin` takes the
/// set-aside draw once, and whenever it cannot (new context, forked child, older than the
/// reserve's limit) draws a new one and loads it over the old. It saves the second key
/// setup per envelope (a provider round trip, the AES key expansion and the GHASH table).
///
/// `@unchecked Sendable` is safe for the same reason as `RSAContext`: `Pool` hands each
/// context to one thread at a time, exclusively (popped under its lock, pushed back under
/// it), and nothing else keeps a reference while it is out.
final class SealingContext: @unchecked Sendable {  // safe: see the proof above
    let cipher: OpaquePointer
    /// The memory one envelope is sealed in, kept from envelope to envelope: an envelope
    /// (about 1.7 KiB for a push) is past the size glibc keeps per-thread caches for, so a
    /// fresh buffer each time went through the allocator's slow path and onto cold memory.
    /// Between envelopes it holds only what they published (ciphertexts, tags, wrapped
    /// keys): the sealer wipes the draw and the wrap wipes the padded block.
    private let keptScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: SealingContext.keptScratchLength, alignment: 16)
    /// Enough for any push's envelope; a larger one gets a buffer of its own.
    static let keptScratchLength = 8 * 1024
    /// Nil where the system cannot make the reserve safe (see `RandomReserve.make`).
    private let reserve: RandomReserve?

    /// Where each part of an envelope's `RandomReserve.drawLength` random bytes lies.
    enum Draw {
        static let key = 0..<AESGCM.keyLength
        static let nonce = key.upperBound..<key.upperBound + AESGCM.nonceLength
        static let seed = nonce.upperBound..<nonce.upperBound + OAEPEncoding.seedLength
        static let length = seed.upperBound
    }

    private init(cipher: OpaquePointer, reserve: RandomReserve?) {
        self.cipher = cipher
        self.reserve = reserve
    }

    /// A new context bound to AES-256-GCM, holding no key yet.
    static func make(reserve: RandomReserve?) throws(SealError) -> SealingContext {
        guard let cipher = AESGCM.cipher, let pointer = EVP_CIPHER_CTX_new() else {
            throw .openSSL(OpenSSLErrorQueue.drain(or: "AES-256-GCM is unavailable"))
        }
        guard EVP_EncryptInit_ex2(pointer, cipher, nil, nil, nil) == 1 else {
            EVP_CIPHER_CTX_free(pointer)
            throw .openSSL(OpenSSLErrorQueue.drain(or: "AES-256-GCM init failed"))
        }
        return SealingContext(cipher: pointer, reserve: reserve)
    }

    deinit {
        // Cleanses the provider state (key schedule included) before freeing it.
        EVP_CIPHER_CTX_free(cipher)
        keptScratch.deallocate()
    }

    /// Scratch memory for one envelope of `byteCount` bytes, uninitialised; hand it back to
    /// `endScratch` once the envelope is sealed (and its secrets wiped).
    func scratch(byteCount: Int) -> UnsafeMutableRawBufferPointer {
        guard byteCount <= Self.keptScratchLength else {
            return UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 16)
        }
        return UnsafeMutableRawBufferPointer(rebasing: keptScratch[..<byteCount])
    }

    func endScratch(_ scratch: UnsafeMutableRawBufferPointer) {
        if scratch.baseAddress != keptScratch.baseAddress { scratch.deallocate() }
    }

    /// Writes this envelope's fresh draw (`RandomReserve.drawLength` bytes, laid out as
    /// `Draw` says) to `draw` and leaves `cipher` loaded with its key and nonce, ready to
    /// encrypt.
    func begin(draw: UnsafeMutableRawBufferPointer) throws(SealError) {
        if let reserve, reserve.takeSetAside(into: draw) { return }
        if let reserve {
            try reserve.draw(into: draw)
        } else {
            guard RAND_bytes(draw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(draw.count)) == 1
            else { throw .openSSL(OpenSSLErrorQueue.drain(or: "the random generator failed")) }
        }
        guard Self.load(UnsafeRawBufferPointer(draw), into: cipher) else {
            throw .openSSL(OpenSSLErrorQueue.drain(or: "AES-256-GCM key setup failed"))
        }
    }

    /// Replaces the key `cipher` holds (the sealed envelope's) before pooling: with the next
    /// envelope's, set aside, or the all-zero key without a reserve. False if OpenSSL failed,
    /// in which case the context must be dropped (`EVP_CIPHER_CTX_free` cleanses it).
    func replaceKey() -> Bool {
        let replaced: Bool
        if let reserve {
            let next = try? reserve.setAside()
            replaced = next.map { Self.load($0, into: cipher) } ?? false
        } else {
            replaced = Self.blankDraw.withUnsafeBytes { Self.load($0, into: cipher) }
        }
        // The failure is not the caller's to report (its envelope is sealed): clear it, so
        // that it cannot be blamed on a later call on this thread.
        if !replaced { OpenSSLErrorQueue.clear() }
        return replaced
    }

    private static func load(_ draw: UnsafeRawBufferPointer, into cipher: OpaquePointer) -> Bool {
        AESGCM.load(
            key: UnsafeRawBufferPointer(rebasing: draw[Draw.key]),
            nonce: UnsafeRawBufferPointer(rebasing: draw[Draw.nonce]), into: cipher)
    }

    /// An all-zero draw, whose key and nonce are loaded into a context that has no reserve
    /// before pooling.
    private static let blankDraw = [UInt8](repeating: 0, count: RandomReserve.drawLength)

    static let pool = Pool()

    final class Pool: Sendable {
        private let idle = Mutex<[SealingContext]>([])
        private static let maximumIdle = 64

        func take() throws(SealError) -> SealingContext {
            if let context = idle.withLock({ $0.popLast() }) { return context }
            return try SealingContext.make(reserve: RandomReserve.make())
        }

        /// Returns a context after sealing, its key replaced (see `SealingContext`), or drops
        /// it after a failure or when the pool is full.
        func giveBack(_ context: SealingContext, reusable: Bool) {
            guard reusable, context.replaceKey() else { return }
            idle.withLock { idle in
                if idle.count < Self.maximumIdle { idle.append(context) }
            }
        }
    }
}
