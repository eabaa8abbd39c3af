import CCurl
import CCurlShims
import Foundation
import PushRuntime
import Synchronization

/// The thread that owns one libcurl multi handle and drives every transfer on it.
///
/// libcurl handles are not thread-safe, so nothing but this thread touches the multi
/// handle or an easy handle once it is added. Other threads talk to it through `inbox`
/// and wake it with `curl_multi_wakeup`, the one multi call documented as callable from
/// any thread.
///
/// The thread starts with `start()` (what `HTTP2Client.run` calls), not at creation:
/// requests submitted before wait in the inbox. A loop stopped before it ever started
/// fails those requests with `.shutDown` and frees the multi handle itself.
final class CurlMultiLoop: Sendable {
    struct Configuration: Sendable {
        var maximumConnectionsPerHost: Int
        var maximumStreamsPerConnection: Int
        var connectTimeout: Duration
        var caFile: String?
        var http2PriorKnowledge: Bool
        var threadName = "pushd-h2"
    }

    /// Only a `.running` loop may be woken: the multi handle is freed by whoever moves the
    /// state to `.neverStarted` or `.exited`, under the lock, before freeing, and every
    /// `curl_multi_wakeup` happens under the same lock, so none can reach a freed handle.
    private let inbox = Mutex(LoopInbox<Transfer>())
    /// The multi handle. Written once in `init`, then used only by the loop thread (and by
    /// `curl_multi_wakeup`, which is thread-safe).
    private let multi: MultiHandle
    private let configuration: Configuration
    private let logger: Logger
    let finished = ShutdownSignal()

    /// The opaque `CURLM*`; why it may be sent between threads: see `multi` above.
    private struct MultiHandle: @unchecked Sendable {  // safe: see the proof above
        let pointer: UnsafeMutableRawPointer
    }

    init(configuration: Configuration, logger: Logger) throws(HTTPClientError) {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard let pointer = curl_multi_init() else { throw .transport(code: -1, message: "curl_multi_init failed") }
        self.multi = MultiHandle(pointer: pointer)
        self.configuration = configuration
        self.logger = logger
        _ = pushd_curl_multi_setopt_long(pointer, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = pushd_curl_multi_setopt_long(pointer, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maximumConnectionsPerHost)
        // Our own cap; the server's SETTINGS_MAX_CONCURRENT_STREAMS still applies below it.
        _ = pushd_curl_multi_setopt_long(pointer, CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.maximumStreamsPerConnection)
    }

    /// Starts the loop thread; later calls, and calls after `stop()`, do nothing.
    func start() {
        guard inbox.withLock({ $0.claimThread() }) else { return }
        ThreadName.startThread(named: configuration.threadName) { [self] in run() }
    }

    /// Hands a transfer to the loop; false if the loop is stopping.
    ///
    /// Only the first transfer since the loop last emptied the inbox wakes it: the loop
    /// takes the whole inbox at once, so later arrivals ride along without a syscall each.
    func submit(_ transfer: Transfer) -> Bool {
        inbox.withLock { inbox -> Bool in
            guard !inbox.stopping else { return false }
            inbox.started.append(transfer)
            if inbox.started.count == 1 { wakeIfRunning(inbox) }
            return true
        }
    }

    func cancel(_ transfer: Transfer) {
        inbox.withLock { inbox in
            inbox.cancelled.append(transfer)
            wakeIfRunning(inbox)
        }
    }

    /// Called with the inbox locked (see `inbox`).
    private func wakeIfRunning(_ inbox: LoopInbox<Transfer>) {
        if inbox.isRunning { curl_multi_wakeup(multi.pointer) }
    }

    /// Takes no new transfers; the loop exits once those in flight are done.
    func stop() {
        let waiting = inbox.withLock { inbox -> [Transfer]? in
            let waiting = inbox.stop()
            wakeIfRunning(inbox)
            return waiting
        }
        guard let waiting else { return }
        // No thread will ever own the handle: release it here, once.
        for transfer in waiting { transfer.complete(.failure(.shutDown)) }
        curl_multi_cleanup(multi.pointer)
        finished.trigger()
    }

    // MARK: - Loop thread only

    /// Finished easy handles, reset and kept for the next transfers: creating one per
    /// request costs allocations that showed up as a fifth of the client's CPU time.
    /// Touched only by the loop thread.
    private static let maximumIdleHandles = 256

    private func run() {
        var active: [UInt64: Transfer] = [:]
        var idleHandles: [UnsafeMutableRawPointer] = []
        while true {
            let (started, cancelled, stopping) = inbox.withLock { $0.take() }
            for transfer in started {
                if start(transfer, reusing: idleHandles.popLast()) { active[transfer.id] = transfer }
            }
            for cancelledTransfer in cancelled {
                guard let transfer = active.removeValue(forKey: cancelledTransfer.id) else { continue }
                finish(transfer, with: .failure(.cancelled), idleHandles: &idleHandles)
            }
            if stopping && active.isEmpty { break }

            var running: Int32 = 0
            curl_multi_perform(multi.pointer, &running)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = message.pointee.data.result
                var context: UnsafeMutableRawPointer?
                _ = pushd_curl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &context)
                guard let context else { continue }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                active.removeValue(forKey: transfer.id)
                finish(transfer, with: result(of: transfer, code: code), idleHandles: &idleHandles)
            }
            // Sleeps until socket activity, a curl timer, or curl_multi_wakeup.
            curl_multi_poll(multi.pointer, nil, 0, 1000, nil)
        }
        for easy in idleHandles { curl_easy_cleanup(easy) }
        inbox.withLock { $0.thread = .exited }
        curl_multi_cleanup(multi.pointer)
        finished.trigger()
    }

    private func start(_ transfer: Transfer, reusing idle: UnsafeMutableRawPointer?) -> Bool {
        guard let easy = idle ?? curl_easy_init() else {
            transfer.complete(.failure(.transport(code: -1, message: "curl_easy_init failed")))
            return false
        }
        transfer.easy = easy
        let request = transfer.request
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var ok = true
        func set(_ option: CURLoption, _ value: Int) { ok = ok && pushd_curl_easy_setopt_long(easy, option, value) == CURLE_OK }
        func set(_ option: CURLoption, _ value: String) { ok = ok && pushd_curl_easy_setopt_string(easy, option, value) == CURLE_OK }
        func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) {
            ok = ok && pushd_curl_easy_setopt_pointer(easy, option, pointer) == CURLE_OK
        }

        set(CURLOPT_URL, request.url)
        set(CURLOPT_HTTP_VERSION, configuration.http2PriorKnowledge ? Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE) : Int(CURL_HTTP_VERSION_2TLS))
        // Wait for an existing connection to offer multiplexing rather than opening more.
        set(CURLOPT_PIPEWAIT, 1)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = configuration.caFile { set(CURLOPT_CAINFO, caFile) }
        set(CURLOPT_TIMEOUT_MS, Int(request.timeout.milliseconds))
        set(CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout.milliseconds))
        set(CURLOPT_PRIVATE, pointer: context)
        set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(transfer.errorBuffer))
        ok = ok && pushd_curl_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, transferWriteCallback) == CURLE_OK
        set(CURLOPT_WRITEDATA, pointer: context)
        ok = ok && pushd_curl_easy_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION, transferHeaderCallback) == CURLE_OK
        set(CURLOPT_HEADERDATA, pointer: context)
        switch request.method {
        case .get:
            set(CURLOPT_HTTPGET, 1)
        case .delete:
            // Handles are reset before reuse, so the custom method does not outlive this request.
            set(CURLOPT_CUSTOMREQUEST, "DELETE")
        case .post:
            set(CURLOPT_POST, 1)
            set(CURLOPT_POSTFIELDSIZE_LARGE, request.body.count)
            // COPYPOSTFIELDS copies the body, so its lifetime is libcurl's problem. With the
            // size set first it copies exactly that many bytes (no terminator needed); an empty
            // body still passes a valid pointer.
            var empty: UInt8 = 0
            ok = ok && request.body.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return pushd_curl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, &empty) == CURLE_OK
                }
                return pushd_curl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: base)) == CURLE_OK
            }
        }
        // No "Expect: 100-continue" round trip on HTTP/1.1 (the admin endpoints).
        var headers: UnsafeMutablePointer<curl_slist>? = curl_slist_append(nil, "Expect:")
        for header in (request.sharedHeaders?.headers ?? []) + request.headers {
            headers = curl_slist_append(headers, "\(header.name): \(header.value)")
        }
        transfer.headerList = headers
        set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headers))

        guard ok, curl_multi_add_handle(multi.pointer, easy) == CURLM_OK else {
            transfer.releaseHandles()
            transfer.complete(.failure(.transport(code: -1, message: "cannot configure the request")))
            return false
        }
        return true
    }

    private func finish(
        _ transfer: Transfer, with result: Result<HTTPResponse, HTTPClientError>, idleHandles: inout [UnsafeMutableRawPointer]
    ) {
        if let easy = transfer.easy {
            curl_multi_remove_handle(multi.pointer, easy)
            if idleHandles.count < Self.maximumIdleHandles {
                // Back to defaults (keeps nothing of this request), ready for the next one.
                curl_easy_reset(easy)
                idleHandles.append(easy)
                transfer.easy = nil
            }
        }
        transfer.releaseHandles()
        transfer.complete(result)
    }

    private func result(of transfer: Transfer, code: CURLcode) -> Result<HTTPResponse, HTTPClientError> {
        guard code == CURLE_OK, let easy = transfer.easy else {
            return .failure(Self.error(for: code, message: transfer.curlErrorMessage))
        }
        var status = 0
        var version = 0
        _ = pushd_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        _ = pushd_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        return .success(HTTPResponse(
            status: status, headers: transfer.responseHeaders, body: transfer.responseBody,
            httpVersion: version == Int(CURL_HTTP_VERSION_2_0) ? 2 : 1))
    }

    static func error(for code: CURLcode, message: String) -> HTTPClientError {
        let detail = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
            return .tlsVerificationFailed(detail)
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_SEND_ERROR, CURLE_RECV_ERROR,
             CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_GOT_NOTHING, CURLE_SSL_CONNECT_ERROR, CURLE_PARTIAL_FILE:
            return .connectionFailed(detail)
        default:
            return .transport(code: Int(code.rawValue), message: detail)
        }
    }
}

extension Duration {
    /// Whole milliseconds, rounded up so a positive duration never becomes zero.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}
