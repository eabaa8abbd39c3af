import COpenSSL
import Foundation
import Synchronization

/// The CA certificates of one PEM file, parsed once per process and given to every AMQP TLS
/// connection that trusts that file, instead of rabbitmq-c reading it for each
/// (`amqp_ssl_socket_set_cacert`). The system's bundle, what a broker with a public
/// certificate needs, is some 140 certificates: 19–20 ms of CPU and 0.8 MiB to parse, paid by
/// a worker's two connections at every start and again at every reconnect.
///
/// `@unchecked Sendable` is safe: the store is filled in `load` and never changed after; an
/// `X509_STORE` is reference counted and locks itself for the look-ups of a verification, so
/// OpenSSL lets any number of `SSL_CTX`s on any threads share one (`SSL_CTX_set1_cert_store`).
final class CACertificates: @unchecked Sendable {  // safe: see the proof above
    let store: OpaquePointer
    /// The file as it was when read: a file replaced or rewritten since is read again, so a
    /// rotated CA takes effect at the next connection, as it did when each one read it.
    let identity: FileIdentity

    private init(store: OpaquePointer, identity: FileIdentity) {
        self.store = store
        self.identity = identity
    }

    deinit {
        X509_STORE_free(store)
    }

    /// The certificates of `path`, read again only if the file changed since.
    static func shared(path: String) throws(CAFileError) -> CACertificates {
        guard let identity = FileIdentity(path: path) else { throw CAFileError(path: path, reason: "cannot read it") }
        // Read under the lock: a second connection starting meanwhile waits for this store
        // instead of parsing the same file again.
        return try loaded.withLock { loaded throws(CAFileError) -> CACertificates in
            if let known = loaded[path], known.identity == identity { return known }
            let certificates = try load(path: path, identity: identity)
            loaded[path] = certificates
            return certificates
        }
    }

    /// Hands the certificates to `context` (an `SSL_CTX *`), which keeps its own reference.
    func install(in context: UnsafeMutableRawPointer) {
        SSL_CTX_set1_cert_store(OpaquePointer(context), store)
    }

    private static let loaded = Mutex<[String: CACertificates]>([:])

    private static func load(path: String, identity: FileIdentity) throws(CAFileError) -> CACertificates {
        guard let store = X509_STORE_new() else { throw CAFileError(path: path, reason: "X509_STORE_new failed") }
        guard X509_STORE_load_file(store, path) == 1 else {
            X509_STORE_free(store)
            ERR_clear_error()
            throw CAFileError(path: path, reason: "no PEM certificate in it")
        }
        return CACertificates(store: store, identity: identity)
    }

    /// What says a file is the one read before: its device, inode, size and modification time.
    struct FileIdentity: Equatable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let modified: timespec

        init?(path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
            size = Int64(status.st_size)
            modified = status.st_mtim
        }

        static func == (left: FileIdentity, right: FileIdentity) -> Bool {
            left.device == right.device && left.inode == right.inode && left.size == right.size
                && left.modified.tv_sec == right.modified.tv_sec && left.modified.tv_nsec == right.modified.tv_nsec
        }
    }
}

/// A CA file that could not be used.
struct CAFileError: Error, CustomStringConvertible {
    let path: String
    let reason: String

    var description: String { "cannot load CA certificates from \(path): \(reason)" }
}
