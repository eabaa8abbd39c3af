import COpenSSL
import Testing

@testable import PushCrypto

/// `clear` runs before every TLS read and write and looks at the queue before clearing it, so
/// it must leave the queue as empty as `ERR_clear_error` would: `SSL_get_error` reads a stale
/// entry as the I/O's own failure and reports a connection as broken.
@Suite("OpenSSL's error queue before a TLS call")
struct OpenSSLErrorQueueTests {
    /// Puts a real OpenSSL failure on this thread's queue: a key-type name no provider has.
    private func failOnce() {
        let context = EVP_PKEY_CTX_new_from_name(nil, "NO-SUCH-ALGORITHM", nil)
        if let context { EVP_PKEY_CTX_free(context) }
    }

    @Test("a queue holding errors is emptied")
    func clearsQueuedErrors() {
        failOnce()
        failOnce()
        #expect(ERR_peek_error() != 0, "the failing call queued nothing: the test proves nothing")
        OpenSSLErrorQueue.clear()
        #expect(ERR_peek_error() == 0)
        #expect(ERR_get_error() == 0)
    }

    @Test("an empty queue stays empty, and errors queued afterwards are seen")
    func emptyQueueStaysUsable() {
        OpenSSLErrorQueue.clear()
        OpenSSLErrorQueue.clear()
        #expect(ERR_peek_error() == 0)
        failOnce()
        #expect(ERR_peek_error() != 0)
        OpenSSLErrorQueue.clear()
    }
}
