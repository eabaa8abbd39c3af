import COpenSSL
import Foundation
import PushCrypto
import Synchronization

/// The CA certificates a TLS client of this process trusts, parsed once per process and
/// shared by every OpenSSL context that trusts them (`SSL_CTX_set1_cert_store`): the AMQP
/// connections (rabbitmq-c read its CA file for each, `amqp_ssl_socket_set_cacert`) and the
/// APNs and FCM clients' HTTP/2 contexts alike. Either one PEM file (`shared(path:)`) or the
/// system's store (`system()`). The system's bundle, what APNs, FCM and a broker with a public
/// certificate need, is some 140 certificates: 19–20 ms of CPU and 0.8 MiB to parse, which a
/// worker with `amqps` paid twice at every start (once for HTTP/2, once for AMQP) and the AMQP
/// side again at every reconnect.
///
/// `@unchecked Sendable` is safe: this object never changes its store after `init`; the store
/// is filled before it is handed out, and afterwards only OpenSSL adds to it (the system
/// directory's look-ups, which cache what they find under the store's own lock). An
/// `X509_STORE` is reference counted and locks itself for the look-ups of a verification, so
/// OpenSSL lets any number of `SSL_CTX`s on any threads share one (`SSL_CTX_set1_cert_store`).
public final class CACertificates: @unchecked Sendable {  // safe: see the proof above
    let store: OpaquePointer
    /// The file as it was when read (nil: the system's store has no bundle file, only its
    /// directory): a file replaced or rewritten since is read again, so a rotated CA takes
    /// effect at the next connection, as it did when each one read it.
    let identity: FileIdentity?
    /// What the certificates came from, for the message of a verification that failed:
    /// which store rejected the peer is the first thing an operator needs to know.
    public let origin: String

    init(store: OpaquePointer, identity: FileIdentity?, origin: String) {
        self.store = store
        self.identity = identity
        self.origin = origin
    }

    deinit {
        X509_STORE_free(store)
    }

    /// The certificates of `path`, read again only if the file changed since. The file is
    /// opened once: its identity and the certificates parsed come from the same descriptor,
    /// so a file replaced in between is never remembered under the old one's identity.
    public static func shared(path: String) throws(CAFileError) -> CACertificates {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw CAFileError(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        guard let identity = FileIdentity(descriptor: descriptor) else {
            throw CAFileError(path: path, reason: String(cString: strerror(errno)))
        }
        return try remembered(.file(path), identity: identity, origin: "the CA file \(path)") { store throws(CAFileError) in
            try add(try contents(of: descriptor, path: path), to: store, path: path)
        }
    }

    /// The store `loaded` holds for `source` while its file keeps `identity`; else a new one,
    /// filled by `fill` and remembered. Parsed under the lock: a second connection starting
    /// meanwhile waits for this store instead of parsing the same file again.
    static func remembered(
        _ source: Source, identity: FileIdentity?, origin: String, fill: (OpaquePointer) throws(CAFileError) -> Void
    ) throws(CAFileError) -> CACertificates {
        try loaded.withLock { loaded throws(CAFileError) -> CACertificates in
            if let known = loaded[source], known.identity == identity { return known }
            guard let store = X509_STORE_new() else { throw CAFileError(path: source.path, reason: "X509_STORE_new failed") }
            do throws(CAFileError) { try fill(store) } catch {
                X509_STORE_free(store)
                throw error
            }
            let certificates = CACertificates(store: store, identity: identity, origin: origin)
            loaded[source] = certificates
            return certificates
        }
    }

    /// Hands the certificates to `context` (an `SSL_CTX *`), which keeps its own reference.
    /// The store is shared by every context of its configuration, APNs, FCM and AMQP alike:
    /// nothing may add to it through a context afterwards (`SSL_CTX_load_verify_locations`,
    /// rabbitmq-c's `amqp_ssl_socket_set_cacert`), which would extend every client's trust
    /// and race with handshakes in progress (OpenSSL does not lock a store's look-up list).
    public func install(in context: OpaquePointer) {
        SSL_CTX_set1_cert_store(context, store)
    }

    /// What a store was read from.
    enum Source: Hashable {
        case file(String)
        /// The system's: its bundle file and its hashed directories, as resolved.
        case system(file: String, directories: String)

        /// The file named in an error.
        var path: String {
            switch self {
            case .file(let path), .system(let path, _): path
            }
        }
    }

    /// One entry per CA configuration a process connects with (the system's, one file, or
    /// two for two brokers' configurations), replaced when its file changes; a replaced
    /// store lives on in the contexts of connections made before, each holding its own
    /// reference.
    static let loaded = Mutex<[Source: CACertificates]>([:])

    static func contents(of descriptor: Int32, path: String) throws(CAFileError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw CAFileError(path: path, reason: String(cString: strerror(errno)))
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Adds every certificate of the PEM text (`CERTIFICATE` and `TRUSTED CERTIFICATE`
    /// blocks, as `X509_STORE_load_file` takes them; other blocks are skipped) to `store`.
    static func add(_ pem: [UInt8], to store: OpaquePointer, path: String) throws(CAFileError) {
        var added = 0
        let failure: String? = pem.withUnsafeBytes { text -> String? in
            guard let bio = BIO_new_mem_buf(text.baseAddress, Int32(text.count)) else { return "BIO_new_mem_buf failed" }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509_AUX(bio, nil, nil, nil) {
                defer { X509_free(certificate) }
                guard X509_STORE_add_cert(store, certificate) == 1 else { return OpenSSLErrorQueue.drain(or: "X509_STORE_add_cert failed") }
                added += 1
            }
            // The end of the text reads as "no start line"; anything else is a damaged block.
            let last = ERR_peek_last_error()
            let damaged = last != 0 && !(ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE)
            return damaged ? OpenSSLErrorQueue.drain(or: "a damaged certificate") : nil
        }
        OpenSSLErrorQueue.clear()
        guard failure == nil, added > 0 else { throw CAFileError(path: path, reason: failure ?? "no PEM certificate in it") }
    }

    /// What says a file is the one read before: its device, inode, size, and modification and
    /// change times (the change time cannot be set back by `cp -p`, `rsync -t` or `touch`).
    struct FileIdentity: Equatable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let modified: timespec
        let changed: timespec

        init?(descriptor: Int32) {
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { return nil }
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
            size = Int64(status.st_size)
            modified = status.st_mtim
            changed = status.st_ctim
        }

        static func == (left: FileIdentity, right: FileIdentity) -> Bool {
            func same(_ a: timespec, _ b: timespec) -> Bool { a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec }
            return left.device == right.device && left.inode == right.inode && left.size == right.size
                && same(left.modified, right.modified) && same(left.changed, right.changed)
        }
    }
}

/// A CA file that could not be used.
public struct CAFileError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String

    public var description: String { "cannot load CA certificates from \(path): \(reason)" }
}
