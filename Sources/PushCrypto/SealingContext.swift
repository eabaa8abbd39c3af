import COpenSSL
import Synchronization

/// What sealing one envelope needs besides the recipient's key, reused across envelopes:
/// an `EVP_CIPHER_CTX` already bound to AES-256-GCM (making one allocates provider state)
/// and a `RandomReserve` for the content key and nonce.
///
/// `@unchecked Sendable` is safe for the same reason as `OAEPContext`: `Pool` hands each
/// context to one thread at a time, exclusively (popped under its lock, pushed back under
/// it), and nothing else keeps a reference while it is out.
final class SealingContext: @unchecked Sendable {  // safe: see the proof above
    let cipher: OpaquePointer
    /// Nil where the system cannot make the reserve safe (see `RandomReserve.make`).
    private let reserve: RandomReserve?

    private init(cipher: OpaquePointer, reserve: RandomReserve?) {
        self.cipher = cipher
        self.reserve = reserve
    }

    deinit {
        // Cleanses the provider state (key schedule included) before freeing it.
        EVP_CIPHER_CTX_free(cipher)
    }

    /// Fills `destination` (key ‖ nonce, `RandomReserve.drawLength` bytes) with fresh
    /// CSPRNG output.
    func drawKeyAndNonce(into destination: UnsafeMutableRawBufferPointer) throws(SealError) {
        if let reserve {
            try reserve.draw(into: destination)
        } else {
            guard RAND_bytes(destination.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(destination.count)) == 1
            else { throw .openSSL(OpenSSLErrorQueue.drain(or: "the random generator failed")) }
        }
    }

    static let pool = Pool()

    final class Pool: Sendable {
        private let idle = Mutex<[SealingContext]>([])
        private static let maximumIdle = 64

        func take() throws(SealError) -> SealingContext {
            if let context = idle.withLock({ $0.popLast() }) { return context }
            guard let cipher = AESGCM.cipher, let pointer = EVP_CIPHER_CTX_new() else {
                throw .openSSL(OpenSSLErrorQueue.drain(or: "AES-256-GCM is unavailable"))
            }
            guard EVP_EncryptInit_ex2(pointer, cipher, nil, nil, nil) == 1 else {
                EVP_CIPHER_CTX_free(pointer)
                throw .openSSL(OpenSSLErrorQueue.drain(or: "AES-256-GCM init failed"))
            }
            return SealingContext(cipher: pointer, reserve: RandomReserve.make())
        }

        /// An all-zero key, loaded into every context before it is pooled.
        private static let blankKey = [UInt8](repeating: 0, count: AESGCM.keyLength)

        /// Returns a context for reuse, or drops it after a failure or when the pool is
        /// full. A pooled context first gets the all-zero key loaded, so that no message's
        /// key schedule (from which its content key follows) stays in memory after sealing;
        /// a dropped one is cleansed by `EVP_CIPHER_CTX_free`.
        func giveBack(_ context: SealingContext, reusable: Bool) {
            let blanked = reusable && Self.blankKey.withUnsafeBufferPointer {
                EVP_EncryptInit_ex2(context.cipher, nil, $0.baseAddress, nil, nil) == 1
            }
            guard blanked else { return }
            idle.withLock { idle in
                if idle.count < Self.maximumIdle { idle.append(context) }
            }
        }
    }
}
