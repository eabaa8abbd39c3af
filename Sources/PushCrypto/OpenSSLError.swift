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

    /// Discards queued errors from an expected failure (e.g. a probe of one key format).
    public static func clear() {
        ERR_clear_error()
    }
}
