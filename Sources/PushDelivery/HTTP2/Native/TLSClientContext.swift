import COpenSSL
import COpenSSLShims
import PushCrypto
import PushTLS
import Synchronization

/// The OpenSSL client context every native HTTP/2 connection is made from: peer
/// verification always on (the system's CA store, or one CA file such as the local
/// emulator's), TLS 1.2 or later without renegotiation, and ALPN offering only `h2`.
///
/// `@unchecked Sendable` is safe: the context is configured completely in `init` and
/// afterwards only used to create sessions (`SSL_new`), which OpenSSL allows from any
/// thread on a configured context, so the loops of one process share it (`shared`).
final class TLSClientContext: @unchecked Sendable {  // safe: see the proof above
    let pointer: OpaquePointer
    /// The CA certificates the context verifies servers against.
    let trust: CACertificates

    /// The context for `caFile` (nil: the system's CA store) that every loop of this process
    /// holding one shares, made by the first. Its certificates are the process's one store
    /// for that configuration (`CACertificates`): the system's bundle is 19–20 ms of CPU and
    /// 0.8 MiB to parse (a C program timing `SSL_CTX_set_default_verify_paths`), which a
    /// worker paid once per client, APNs and FCM, and once more for AMQP over TLS, at every
    /// start. A context keeps the store it was made with, so a CA file replaced while a
    /// client holds its context takes effect once none does.
    static func shared(caFile: String?) throws(HTTPClientError) -> TLSClientContext {
        // Made under the lock: a second loop starting meanwhile waits for this context
        // instead of loading the same store again.
        try contexts.withLock { contexts throws(HTTPClientError) -> TLSClientContext in
            if let context = contexts[caFile]?.context { return context }
            let context = try TLSClientContext(caFile: caFile)
            contexts[caFile] = WeakContext(context: context)
            return context
        }
    }

    /// Held weakly, so the last loop to stop frees its context (and a later one reads its
    /// CA file again).
    private struct WeakContext {
        weak var context: TLSClientContext?
    }

    private static let contexts = Mutex<[String?: WeakContext]>([:])

    init(caFile: String?) throws(HTTPClientError) {
        // The process's one store for this CA configuration (`CACertificates`): for the
        // system's, the very store the AMQP connections verify the broker against.
        do throws(CAFileError) {
            trust = if let caFile { try CACertificates.shared(path: caFile) } else { try CACertificates.system() }
        } catch {
            throw .tlsVerificationFailed(error.description)
        }
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw .transport(code: -1, message: "SSL_CTX_new failed: \(OpenSSLErrorQueue.drain(or: "no detail"))")
        }
        pointer = context  // from here a failure frees it (deinit)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        // A renegotiation would also make a write into the cipher BIO wait for a read,
        // which `H2Connection.flush` does not expect.
        pushd_ssl_ctx_refuse_renegotiation(context)
        guard pushd_ssl_ctx_require_tls12(context) == 1 else {
            throw .transport(code: -1, message: "cannot require TLS 1.2: \(OpenSSLErrorQueue.drain(or: "no detail"))")
        }
        trust.install(in: context)
        // The wire format of ALPN: each protocol name prefixed by its length.
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        // Returns 0 on success, unlike most of OpenSSL.
        guard SSL_CTX_set_alpn_protos(context, alpn, UInt32(alpn.count)) == 0 else {
            throw .transport(code: -1, message: "cannot set ALPN: \(OpenSSLErrorQueue.drain(or: "no detail"))")
        }
    }

    deinit {
        SSL_CTX_free(pointer)
    }

    /// A new TLS session on `descriptor`, set to verify that the certificate names `host`
    /// (a DNS name or an IP literal) and to send `host` as SNI when it is a name.
    ///
    /// It reads from the socket but writes its records to memory (`cipher`, owned by the
    /// session), for the connection to send in one system call: written straight to the
    /// socket, each TLS record (16 KiB at most) was a write of its own, and a pass that sent
    /// 25 pushes made five of them.
    func makeSession(descriptor: Int32, host: String, hostIsAddress: Bool) throws(HTTPClientError) -> (ssl: OpaquePointer, cipher: OpaquePointer) {
        guard let ssl = SSL_new(pointer) else { throw .transport(code: -1, message: "SSL_new failed: \(OpenSSLErrorQueue.drain(or: "no detail"))") }
        guard let socketBIO = BIO_new_socket(descriptor, BIO_NOCLOSE) else {
            SSL_free(ssl)
            throw .transport(code: -1, message: "BIO_new_socket failed: \(OpenSSLErrorQueue.drain(or: "no detail"))")
        }
        guard let cipher = pushd_cipher_bio_new() else {
            BIO_free(socketBIO)
            SSL_free(ssl)
            throw .transport(code: -1, message: "cannot make the cipher buffer BIO: \(OpenSSLErrorQueue.drain(or: "no detail"))")
        }
        SSL_set_bio(ssl, socketBIO, cipher)  // the session owns both from here
        let ok: Bool
        if hostIsAddress {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
        } else {
            ok = SSL_set1_host(ssl, host) == 1 && pushd_ssl_set_server_name(ssl, host) == 1
        }
        guard ok else {
            SSL_free(ssl)
            throw .transport(code: -1, message: "cannot configure TLS for \(host): \(OpenSSLErrorQueue.drain(or: "no detail"))")
        }
        SSL_set_connect_state(ssl)
        return (ssl, cipher)
    }
}
