import COpenSSL

/// The bare RSA-OAEP-SHA1 public-key operation with one reused OpenSSL context, no pool,
/// no lock and no AES: the physical limit of the envelope scheme, which `pushd bench
/// crypto` measures beside the full envelope. Not for production use: one instance must
/// stay on one thread.
public final class RSAOAEPBaseline {
    private let key: DevicePublicKey
    private let context: RSAContext
    private var output: [UInt8]
    private let input = [UInt8](repeating: 0x5a, count: 32)

    public init(key: DevicePublicKey) throws(SealError) {
        self.key = key
        self.context = try RSAContext.forOAEPEncryption(with: key.key)
        self.output = [UInt8](repeating: 0, count: key.modulusBytes)
    }

    deinit {
        EVP_PKEY_CTX_free(context.pointer)
    }

    /// One OAEP encryption of a 32-byte block; returns false if OpenSSL failed.
    public func encryptOnce() -> Bool {
        var length = output.count
        return EVP_PKEY_encrypt(context.pointer, &output, &length, input, input.count) == 1
    }
}
