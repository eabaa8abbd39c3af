/// One request on the native HTTP/2 engine: what was asked, and the response as it arrives.
///
/// `@unchecked Sendable` is safe because ownership moves exactly once: the sending task
/// builds it and sets `continuation`, then hands it to the loop through the loop's locked
/// inbox; from then on only the loop thread reads or writes it, including nghttp2's
/// callbacks, which run inside the loop's own `nghttp2_session_mem_recv`/`mem_send` calls.
final class Exchange: @unchecked Sendable {  // safe: see the proof above
    /// Unsafe rather than checked: a checked continuation allocates a tracking object per
    /// request, one of the costs of every push. It is resumed exactly once because only
    /// `complete` resumes it, and `complete` clears it; and it is always resumed, because
    /// every exchange the loop takes ends in `complete` (answered, failed, timed out,
    /// cancelled or shut down), as does one the loop refused.
    typealias Completion = UnsafeContinuation<Result<HTTPResponse, HTTPClientError>, Never>

    /// Responses larger than this are refused (the stream is reset), as libcurl's engine does.
    static let maximumResponseBytes = 1 << 20

    let id: UInt64
    let request: HTTPRequest
    let target: RequestTarget
    /// The whole exchange, connecting included, must end by then.
    let deadline: ContinuousClock.Instant
    var continuation: Completion?

    // Loop thread only.
    /// The stream carrying it and its connection, once submitted; 0 while waiting.
    var streamID: Int32 = 0
    var connectionID = 0
    /// Bytes of the request body already handed to nghttp2.
    var bodySent = 0
    var status = 0
    var responseHeaders: [String: String] = [:]
    var responseBody: [UInt8] = []
    /// Why the loop reset the stream itself (a response too large), reported when it closes.
    var resetReason: HTTPClientError?
    var isFinished: Bool { continuation == nil }

    init(id: UInt64, request: HTTPRequest, target: RequestTarget, now: ContinuousClock.Instant) {
        self.id = id
        self.request = request
        self.target = target
        self.deadline = now.advanced(by: request.timeout)
    }

    /// Resumes the waiting task once; later calls are ignored.
    func complete(_ result: Result<HTTPResponse, HTTPClientError>) {
        continuation?.resume(returning: result)
        continuation = nil
    }

    /// Back to the state of a request not yet sent, for a stream the server refused
    /// without processing it (REFUSED_STREAM, or above a GOAWAY's last stream id).
    func rewind() {
        streamID = 0
        connectionID = 0
        bodySent = 0
        status = 0
        responseHeaders.removeAll()
        responseBody.removeAll()
        resetReason = nil
    }
}
