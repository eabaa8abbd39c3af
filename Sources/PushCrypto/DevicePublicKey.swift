import COpenSSL
import Synchronization

/// A device's RSA public key, parsed once and ready to wrap content keys many times.
///
/// Parsing is the costly part of using a key, so a `DevicePublicKey` is meant to be kept
/// (see `PublicKeyCache`) and shared: wrapping is safe from any number of tasks at once.
/// It keeps a few ready-made RSA contexts so that the per-message cost is the one RSA
/// operation the scheme cannot avoid.
public final class DevicePublicKey: Sendable {
    let key: EVPKey
    /// Modulus size in bits: one of `acceptedSizes`.
    public let bits: Int
    /// `EVP_PKEY_CTX`s for sealing's RSA operation not in use right now. A context is used by one
    /// thread at a time: taken from here, used, given back.
    private let idleContexts = Mutex<[RSAContext]>([])
    private static let maximumIdleContexts = 16

    /// Parses a key the way devices export it: base64 DER PKCS#1 `RSAPublicKey` (iOS),
    /// base64 DER `SubjectPublicKeyInfo` (Android), or PEM of either. Base64 may be wrapped
    /// in lines or URL-safe, as Android's `Base64` flags produce.
    public convenience init(parsing text: String) throws(PublicKeyError) {
        try self.init(parsing: text, publicKeyCheck: .run)
    }

    /// What `pushd_public_key_checks` records for a key text that passed the full check: the
    /// SHA-256 of its UTF-8 bytes exactly as stored in `devices.public_key` (the device lookups
    /// test `sha256(convert_to(d.public_key, 'UTF8'))`), so a rotated or re-encoded key is
    /// checked again.
    public static func checkDigest(ofKeyText text: String) -> [UInt8] {
        Digest.sha256(Array(text.utf8))
    }

    /// As `init(parsing:)`; `.passedBefore` leaves out OpenSSL's public-key check, for a text
    /// the cluster has already checked (`PublicKeyCache`, `pushd_public_key_checks`). The
    /// algorithm, size and exponent are checked either way: they cost microseconds, the
    /// public-key check about 5 ms (its Miller-Rabin test of the modulus).
    public convenience init(parsing text: String, publicKeyCheck check: PublicKeyCheck) throws(PublicKeyError) {
        let trimmed = text.trimmingWhitespace()
        if trimmed.hasPrefix("-----BEGIN ") {
            guard let block = PEM.parse(trimmed) else { throw .unparseable("PEM armor or base64 body is broken, or text follows its END line") }
            switch block.label {
            case "PUBLIC KEY": try self.init(subjectPublicKeyInfoDER: block.der, check: check)
            case "RSA PUBLIC KEY": try self.init(pkcs1DER: block.der, check: check)
            default: throw .unparseable("PEM label \"\(PublicKeyError.excerpt(block.label))\" is not PUBLIC KEY or RSA PUBLIC KEY")
            }
            return
        }
        guard let der = Base64.decodeLenient(trimmed), !der.isEmpty else {
            throw .unparseable("not valid base64")
        }
        try self.init(der: der, check: check)
    }

    /// Parses DER that is either `SubjectPublicKeyInfo` or PKCS#1 `RSAPublicKey`.
    public convenience init(der: [UInt8], check: PublicKeyCheck = .run) throws(PublicKeyError) {
        if let key = Self.decodeSubjectPublicKeyInfo(der) {
            try self.init(validating: key, check: check)
        } else {
            try self.init(pkcs1DER: der, check: check)
        }
    }

    convenience init(subjectPublicKeyInfoDER der: [UInt8], check: PublicKeyCheck) throws(PublicKeyError) {
        guard let key = Self.decodeSubjectPublicKeyInfo(der) else {
            throw .unparseable("DER is not a SubjectPublicKeyInfo")
        }
        try self.init(validating: key, check: check)
    }

    /// `d2i_PUBKEY`, with a short cut for the one form Android exports: OpenSSL 3 decodes a
    /// SubjectPublicKeyInfo through its decoder framework, about 230 µs a key, where the
    /// PKCS#1 key inside takes `d2i_PublicKey` a few. The short cut takes only DER in which
    /// the algorithm is exactly rsaEncryption with NULL parameters and every length is
    /// exact; anything else goes to `d2i_PUBKEY` as before. In that shape the BIT STRING must
    /// hold the PKCS#1 key and nothing more; through `d2i_PUBKEY`, which ignores bytes after
    /// the key inside the BIT STRING, an RSA key must be the one DER encoding of itself.
    private static func decodeSubjectPublicKeyInfo(_ der: [UInt8]) -> EVPKey? {
        if let inner = SubjectPublicKeyInfo.rsaPublicKey(in: der) {
            return decode(Array(inner), using: { d2i_PublicKey(EVP_PKEY_RSA, nil, $0, $1) })
        }
        guard let key = decode(der, using: { d2i_PUBKEY(nil, $0, $1) }) else { return nil }
        if key.isRSA, subjectPublicKeyInfoDER(of: key) != der { return nil }
        return key
    }

    /// `i2d_PUBKEY`: the key's SubjectPublicKeyInfo in DER; nil if OpenSSL cannot encode it.
    private static func subjectPublicKeyInfoDER(of key: EVPKey) -> [UInt8]? {
        let length = i2d_PUBKEY(key.pointer, nil)
        guard length > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(key.pointer, &cursor)
        }
        return written == length ? bytes : nil
    }

    convenience init(pkcs1DER der: [UInt8], check: PublicKeyCheck) throws(PublicKeyError) {
        guard let key = Self.decode(der, using: { d2i_PublicKey(EVP_PKEY_RSA, nil, $0, $1) }) else {
            throw .unparseable("DER is neither a SubjectPublicKeyInfo nor a PKCS#1 RSAPublicKey")
        }
        try self.init(validating: key, check: check)
    }

    /// Whether parsing runs OpenSSL's public-key check.
    public enum PublicKeyCheck: Sendable {
        /// Runs it: a key never checked before.
        case run
        /// Leaves it out: this very text passed it before (in this cluster, recorded by digest).
        case passedBefore
    }

    /// The modulus sizes devices generate (iOS and Android key generators offer these);
    /// anything else is refused rather than trusted.
    public static let acceptedSizes: Set<Int> = [2048, 3072, 4096]
    /// The only public exponent accepted. A tiny exponent makes RSA-OAEP of a short secret
    /// unsafe (with e = 1 the "wrapped" AES key is the key itself), and every platform
    /// generator uses 65537.
    public static let acceptedExponent: UInt64 = 65_537

    /// Refuses anything but an RSA key of an accepted size and exponent that passes
    /// OpenSSL's public-key check: the key protects everything sealed for the device.
    init(validating key: EVPKey, check: PublicKeyCheck) throws(PublicKeyError) {
        guard key.isRSA else { throw .notRSA(algorithm: key.algorithmName) }
        guard key.bits >= 2048 else { throw .tooSmall(bits: key.bits) }
        guard Self.acceptedSizes.contains(key.bits) else { throw .unsupportedSize(bits: key.bits) }
        let exponent = key.rsaPublicExponent
        guard exponent == Self.acceptedExponent else { throw .unsupportedExponent(exponent) }
        if check == .run, !key.passesPublicKeyCheck { throw .failedPublicKeyCheck }
        self.key = key
        self.bits = key.bits
    }

    deinit {
        idleContexts.withLock { contexts in
            for context in contexts { EVP_PKEY_CTX_free(context.pointer) }
            contexts.removeAll()
        }
    }

    /// Runs an OpenSSL `d2i_*` decoder and insists it consumed every byte: trailing
    /// garbage after a valid key is refused rather than silently ignored.
    private static func decode(
        _ der: [UInt8],
        using decoder: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?
    ) -> EVPKey? {
        der.withUnsafeBufferPointer { buffer -> EVPKey? in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let pointer = decoder(&cursor, buffer.count) else {
                OpenSSLErrorQueue.clear()
                return nil
            }
            let key = EVPKey(taking: pointer)
            guard let cursor, cursor == base + buffer.count else { return nil }
            return key
        }
    }

    /// The key as iOS exports it: base64 of PKCS#1 `RSAPublicKey` DER.
    public var pkcs1Base64: String { Base64.encode(key.typeSpecificPublicDER()) }
    /// The key as Android exports it: base64 of `SubjectPublicKeyInfo` DER.
    public var subjectPublicKeyInfoBase64: String { Base64.encode(key.subjectPublicKeyInfoDER()) }
    /// `-----BEGIN PUBLIC KEY-----` PEM.
    public var pem: String { PEM.armor(key.subjectPublicKeyInfoDER(), label: "PUBLIC KEY") }
    /// `-----BEGIN RSA PUBLIC KEY-----` PEM (PKCS#1).
    public var pkcs1PEM: String { PEM.armor(key.typeSpecificPublicDER(), label: "RSA PUBLIC KEY") }

    /// Size of one RSA block: the length of every wrapped key.
    var modulusBytes: Int { (bits + 7) / 8 }

    /// Encrypts a short secret (the AES content key) with RSA-OAEP, SHA-1 and MGF1-SHA-1
    /// into `output`, which must hold `modulusBytes` bytes. `seed` is the encryption's 20
    /// fresh random bytes (never used for another); `encoded` (`modulusBytes` bytes) holds
    /// the padded block, which determines the secret, and is wiped before this returns.
    func wrap(
        _ secret: UnsafeRawBufferPointer, seed: UnsafeRawBufferPointer, encoded: UnsafeMutableRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws(SealError) {
        precondition(output.count >= modulusBytes && encoded.count == modulusBytes)
        defer { OPENSSL_cleanse(encoded.baseAddress, encoded.count) }
        try OAEPEncoding.encode(secret, seed: seed, into: encoded)
        let context = try takeContext()
        var outputLength = modulusBytes
        let status = EVP_PKEY_encrypt(
            context.pointer, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &outputLength,
            encoded.baseAddress?.assumingMemoryBound(to: UInt8.self), encoded.count)
        guard status == 1, outputLength == modulusBytes else {
            EVP_PKEY_CTX_free(context.pointer)
            throw .openSSL(OpenSSLErrorQueue.drain(or: "RSA encryption failed"))
        }
        giveBack(context)
    }

    private func takeContext() throws(SealError) -> RSAContext {
        if let idle = idleContexts.withLock({ $0.popLast() }) { return idle }
        return try RSAContext.forEncodedEncryption(with: key)
    }

    private func giveBack(_ context: RSAContext) {
        let kept = idleContexts.withLock { contexts -> Bool in
            guard contexts.count < Self.maximumIdleContexts else { return false }
            contexts.append(context)
            return true
        }
        if !kept { EVP_PKEY_CTX_free(context.pointer) }
    }
}

/// An `EVP_PKEY_CTX` set up for one RSA operation: OAEP with SHA-1 and MGF1-SHA-1 (the
/// padding the iOS `.rsaEncryptionOAEPSHA1` and Android `OAEPWithSHA-1AndMGF1Padding`
/// clients expect), or, for sealing, the bare operation over a block `OAEPEncoding` padded.
///
/// `@unchecked Sendable` is safe because a context only ever moves between threads, never
/// is used by two at once: `DevicePublicKey` hands each one out exclusively (popped from
/// its pool under the lock) and takes it back the same way; all other holders own a
/// context from creation to `EVP_PKEY_CTX_free` on one thread.
struct RSAContext: @unchecked Sendable {  // safe: see the proof above
    let pointer: OpaquePointer

    /// OpenSSL's own OAEP encryption: the baseline `pushd bench crypto` compares with.
    static func forOAEPEncryption(with key: EVPKey) throws(SealError) -> RSAContext {
        try make(key, padding: RSA_PKCS1_OAEP_PADDING) { EVP_PKEY_encrypt_init($0) }
    }

    static func forOAEPDecryption(with key: EVPKey) throws(SealError) -> RSAContext {
        try make(key, padding: RSA_PKCS1_OAEP_PADDING) { EVP_PKEY_decrypt_init($0) }
    }

    /// The RSA operation alone, over a full block that `OAEPEncoding` has already padded
    /// (its leading zero byte keeps it below the modulus, which OpenSSL checks).
    static func forEncodedEncryption(with key: EVPKey) throws(SealError) -> RSAContext {
        try make(key, padding: RSA_NO_PADDING) { EVP_PKEY_encrypt_init($0) }
    }

    private static func make(
        _ key: EVPKey, padding: Int32, initialize: (OpaquePointer) -> Int32
    ) throws(SealError) -> RSAContext {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
            throw .openSSL(OpenSSLErrorQueue.drain(or: "cannot allocate an RSA context"))
        }
        var configured = initialize(context) == 1 && EVP_PKEY_CTX_set_rsa_padding(context, padding) == 1
        if configured && padding == RSA_PKCS1_OAEP_PADDING {
            configured = EVP_PKEY_CTX_set_rsa_oaep_md(context, EVP_sha1()) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(context, EVP_sha1()) == 1
        }
        guard configured else {
            EVP_PKEY_CTX_free(context)
            throw .openSSL(OpenSSLErrorQueue.drain(or: "cannot configure RSA for OAEP-SHA1"))
        }
        return RSAContext(pointer: context)
    }
}

extension String {
    /// The text without leading and trailing whitespace (`Character.isWhitespace`).
    ///
    /// Every key a worker's cache does not hold passes here. Walking Characters from both
    /// ends ran grapheme breaking over the key, and building the result copied it even when
    /// nothing was trimmed: 5.6% of a new key's cost (`bench crypto`, a key recorded as
    /// checked). So ASCII whitespace is trimmed on the UTF-8 bytes, and the text itself is
    /// returned when there is none. Where a non-ASCII byte borders what is kept, a Character
    /// could span the border (a space with a combining mark is whitespace as a whole), so
    /// that text takes the Character walk.
    func trimmingWhitespace() -> String {
        let trimmed = utf8.withContiguousStorageIfAvailable { bytes -> Range<Int>? in
            var start = 0
            var end = bytes.count
            while start < end, Self.isASCIIWhitespace(bytes[start]) { start += 1 }
            while end > start, Self.isASCIIWhitespace(bytes[end - 1]) { end -= 1 }
            guard start == end || (bytes[start] < 0x80 && bytes[end - 1] < 0x80) else { return nil }
            return start..<end
        }
        guard let range = trimmed ?? nil else { return trimmingWhitespaceByCharacter() }
        if range.count == utf8.count { return self }
        let start = utf8.index(utf8.startIndex, offsetBy: range.lowerBound)
        let end = utf8.index(utf8.startIndex, offsetBy: range.upperBound)
        return String(self[start..<end])
    }

    /// The general case: `Character` by `Character` from both ends.
    func trimmingWhitespaceByCharacter() -> String {
        var view = Substring(self)
        while let first = view.first, first.isWhitespace { view.removeFirst() }
        while let last = view.last, last.isWhitespace { view.removeLast() }
        return String(view)
    }

    /// The ASCII characters with Unicode's White_Space property: tab, line feed, vertical
    /// tab, form feed, carriage return and space.
    private static func isASCIIWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (byte >= 0x09 && byte <= 0x0D)
    }
}
