import PushRuntime

/// One request on the native HTTP/2 engine: what was asked, and the response as it arrives.
///
/// `@unchecked Sendable` is safe because ownership moves exactly once: the sender builds
/// it and sets `completion`, then hands it to the loop through the loop's locked inbox;
/// from then on only the loop thread reads or writes it, including nghttp2's callbacks,
/// which run inside the loop's own `nghttp2_session_mem_recv`/`mem_send` calls. A
/// cancellation handler only hands the reference back through the same inbox. (`group` is
/// immutable and itself Sendable.)
final class Exchange: @unchecked Sendable {  // safe: see the proof above
    typealias Result = Swift.Result<HTTPResponse, HTTPClientError>

    /// Who learns the result: a task awaiting it, or a callback run where the result is
    /// known (on the loop thread, or on the submitter's if the loop refused the request).
    ///
    /// The continuation is unsafe rather than checked: a checked continuation allocates a
    /// tracking object per request, one of the costs of every push. Either is called exactly
    /// once because only `complete` calls it, and `complete` clears it; and always, because
    /// every exchange the loop takes ends in `complete` (answered, failed, timed out,
    /// cancelled or shut down), as does one the loop refused.
    enum Completion {
        case resume(UnsafeContinuation<Result, Never>)
        case call(@Sendable (Result) -> Void)
    }

    /// Responses larger than this are refused (the stream is reset), as libcurl's engine does.
    static let maximumResponseBytes = 1 << 20

    let id: UInt64
    let request: HTTPRequest
    let target: RequestTarget
    /// The whole exchange, connecting included, must end by then.
    let deadline: ContinuousClock.Instant
    /// Cancelled together with the other requests of its group (`HTTP2Client.submit`).
    let group: RequestGroup?
    var completion: Completion?
    /// The sender's in-flight permit, returned when the exchange completes (a submitted
    /// request has no awaiting task to return it).
    var permit: AsyncSemaphore?

    // Loop thread only.
    /// The stream carrying it and its connection, once submitted; 0 while waiting.
    var streamID: Int32 = 0
    var connectionID = 0
    /// Bytes of the request body already handed to nghttp2.
    var bodySent = 0
    var status = 0
    var responseHeaders = HTTPHeaders()
    var responseBody: [UInt8] = []
    /// Why the loop reset the stream itself (a response too large), reported when it closes.
    var resetReason: HTTPClientError?
    var isFinished: Bool { completion == nil }
    /// Its links in the loop's `OutstandingExchanges` while it is listed there. The previous
    /// one is not retained: each listed exchange is held by the one before it, or the list.
    var isOutstanding = false
    var nextOutstanding: Exchange?
    unowned(unsafe) var previousOutstanding: Exchange?
    /// The bytes of its header block (`RequestHeaders`), which nghttp2 reads where they lie
    /// (`NGHTTP2_NV_FLAG_NO_COPY_*`) until it has packed the HEADERS frame or closed the
    /// stream. So they live as long as the exchange, and the connection holds the exchange
    /// until its stream has closed, an abandoned one included (`H2Connection.abandoned`).
    /// Rewritten only when the exchange is sent again, which follows the close of the stream
    /// that read them (refused) or the deletion of its session.
    private var headerBytes = UnsafeMutableBufferPointer<UInt8>(start: nil, count: 0)

    init(id: UInt64, request: consuming HTTPRequest, target: RequestTarget, group: RequestGroup? = nil, now: ContinuousClock.Instant) {
        self.id = id
        self.deadline = now.advanced(by: request.timeout)
        self.request = request
        self.target = target
        self.group = group
    }

    deinit {
        headerBytes.deallocate()
    }

    /// `headerBytes`, holding at least `capacity` bytes (their content is the caller's).
    func headerStorage(capacity: Int) -> UnsafeMutableBufferPointer<UInt8> {
        if headerBytes.count < capacity {
            headerBytes.deallocate()
            headerBytes = .allocate(capacity: capacity)
        }
        return headerBytes
    }

    /// Resumes the waiting task, or calls the callback, once; later calls are ignored.
    func complete(_ result: Result) {
        let completion = self.completion
        self.completion = nil
        if completion != nil, let permit {
            self.permit = nil
            permit.release()
        }
        switch completion {
        case .resume(let continuation): continuation.resume(returning: result)
        case .call(let callback): callback(result)
        case nil: break
        }
    }

    /// The response as received, moved out (the exchange is finished with it): copying the
    /// headers and body into the response cost a retain and a release of each.
    func takeResponse() -> HTTPResponse {
        var headers = HTTPHeaders()
        var body: [UInt8] = []
        swap(&headers, &responseHeaders)
        swap(&body, &responseBody)
        return HTTPResponse(status: status, headers: headers, body: body, httpVersion: 2)
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
