import CNGHTTP2
import COpenSSL
import COpenSSLShims
import Foundation
import PushCrypto

/// What a connection reports to its loop. Called on the loop thread, from inside the
/// connection's own calls (nghttp2 callbacks included).
protocol H2ConnectionDelegate: AnyObject {
    /// The exchange got its response, or failed on this connection.
    func connection(_ connection: H2Connection, finished exchange: Exchange, with result: Result<HTTPResponse, HTTPClientError>)
    /// The server did not process the exchange (REFUSED_STREAM, or above a GOAWAY's last
    /// stream id): it is safe to send again, on another connection.
    func connection(_ connection: H2Connection, refused exchange: Exchange)
    /// The socket took less than was ready to send: the peer (or the network) is slower
    /// than the frames are made, and the rest waits for POLLOUT.
    func connectionFoundSocketFull(_ connection: H2Connection)
}

/// One HTTP/2 connection over TLS: a non-blocking socket, an OpenSSL session and an nghttp2
/// client session, driven by the loop's `poll`.
///
/// Only the loop thread touches it. nghttp2 works on memory (`mem_recv`/`mem_send`), and
/// TLS writes its records to memory too (see `TLSClientContext.makeSession`); this class
/// moves bytes between them and the socket, so reading a burst of responses or writing a
/// batch of requests costs one system call per 64 KiB rather than one per request or
/// per TLS record.
final class H2Connection {
    enum State: Equatable { case resolving, connecting, handshaking, ready, closed }

    let id: Int
    let host: String
    let port: Int
    let connectionKey: String
    let hostIsAddress: Bool
    private(set) var state = State.resolving
    private(set) var descriptor: Int32 = -1
    /// Connecting and the TLS handshake must be done by then.
    let connectDeadline: ContinuousClock.Instant
    /// Streams in flight, by id: the one owner of their exchanges while they are sent.
    private(set) var streams: [Int32: Exchange] = [:]
    /// The stream a callback last asked for, and its exchange: a response's status, headers,
    /// body and end arrive one after another for one stream, so each callback after the first
    /// finds it here instead of hashing into `streams` again. Cleared whenever that stream
    /// leaves `streams` (ids are never reused on a connection).
    private var recentStream: (id: Int32, exchange: Exchange)?
    /// Exchanges abandoned (timed out or cancelled) whose streams nghttp2 has not closed yet.
    /// nghttp2 documents header fields passed without a copy as read until their HEADERS is
    /// sent or dropped (`Exchange.headerStorage`), and either ends, at the latest, with the
    /// stream's close callback or the session's deletion: so they are held until then, and
    /// nothing is reported for them. (nghttp2 1.52 cancels a request still queued when it is
    /// reset, and never reads its fields; the hold does not depend on that.)
    private var abandoned: [Int32: Exchange] = [:]
    /// Takes no new streams: the server sent GOAWAY, stream ids ran out, or the loop stops.
    var isDraining = false
    /// When a PING was sent to check a connection whose request timed out; cleared by its ACK.
    var pingSentAt: ContinuousClock.Instant?
    /// Whether the server's first SETTINGS frame (its stream limit) has arrived.
    private(set) var serverSettingsReceived = false
    /// Ciphertext waits for a full socket to take it (POLLOUT).
    private var wantsWrite = false

    private var ssl: OpaquePointer?
    /// The buffer BIO the session writes its records to (`pushd_cipher_bio_new`), owned by
    /// `ssl`.
    private var cipher: OpaquePointer?
    private var session: OpaquePointer?
    private var addresses: [SocketAddress] = []
    private var nextAddress = 0
    private var lastConnectError: HTTPClientError?
    /// Frames from nghttp2 for TLS to encrypt, in one go.
    private var outbound: [UInt8] = []
    private let maximumStreams: Int
    private let tls: TLSClientContext
    private let callbacks: H2SessionCallbacks
    unowned let delegate: any H2ConnectionDelegate

    /// Stop pulling frames from nghttp2 above this many unsent bytes, which TLS then
    /// encrypts and `sendCipher` sends in one system call. This buffer and the cipher BIO
    /// behind it keep their capacity, so the mark is held per connection for good: about
    /// 130 KiB each at 64 KiB (with 256 KiB, over 4 MiB for a worker's eight connections).
    private static let outboundHighWater = 64 * 1024

    init(
        id: Int, target: RequestTarget, connectTimeout: Duration, maximumStreams: Int, tls: TLSClientContext,
        callbacks: H2SessionCallbacks, delegate: any H2ConnectionDelegate,
        now: ContinuousClock.Instant
    ) {
        self.id = id
        self.host = target.host
        self.port = target.port
        self.connectionKey = target.connectionKey
        self.hostIsAddress = SocketAddress.isLiteral(target.host)
        self.connectDeadline = now.advanced(by: connectTimeout)
        self.maximumStreams = max(1, maximumStreams)
        self.tls = tls
        self.callbacks = callbacks
        self.delegate = delegate
    }

    deinit {
        release()
    }

    // MARK: - Capacity

    /// Whether a new stream may start here now.
    var hasRoom: Bool {
        state == .ready && !isDraining && streams.count < capacity
    }

    /// Ours or the server's SETTINGS_MAX_CONCURRENT_STREAMS, whichever is lower; one stream
    /// until the server's first SETTINGS frame has arrived. Until then nghttp2 assumes no
    /// limit, and a burst sent into that gap meets a server limit it did not know: refused
    /// streams, or (Python's h2 and others) the whole connection closed with a protocol error.
    var capacity: Int {
        guard let session else { return maximumStreams }
        guard serverSettingsReceived else { return 1 }
        let remote = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        return min(maximumStreams, Int(remote))
    }

    /// The `poll` events this connection waits for.
    var pollEvents: Int16 {
        switch state {
        case .resolving, .closed: 0
        case .connecting: Int16(POLLOUT)
        case .handshaking: Int16(wantsWrite ? POLLOUT : POLLIN)  // the handshake's records out first
        case .ready: Int16(POLLIN) | (wantsWrite ? Int16(POLLOUT) : 0)
        }
    }

    // MARK: - Connecting

    /// Starts connecting to the resolved addresses, in order; an error if none could start.
    func begin(addresses: [SocketAddress]) -> HTTPClientError? {
        self.addresses = addresses
        nextAddress = 0
        return connectNext()
    }

    /// Opens a non-blocking socket to the next address. TCP_NODELAY: a request is one
    /// small write that must not wait for the previous one's ACK.
    private func connectNext() -> HTTPClientError? {
        closeSocket()
        while nextAddress < addresses.count {
            let address = addresses[nextAddress]
            nextAddress += 1
            let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            let fd = socket(address.family, socketType, 0)
            guard fd >= 0 else {
                lastConnectError = .connectionFailed("socket: \(String(cString: strerror(errno)))")
                continue
            }
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            _ = setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
            let status = address.bytes.withUnsafeBytes { raw in
                connect(fd, raw.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            if status == 0 || errno == EINPROGRESS {
                descriptor = fd
                state = .connecting
                return nil
            }
            lastConnectError = .connectionFailed("connect to \(host):\(port): \(String(cString: strerror(errno)))")
            Foundation.close(fd)
        }
        return lastConnectError ?? .connectionFailed("no address to connect to for \(host)")
    }

    /// Handles what `poll` reported; an error means the connection is finished and the loop
    /// must `close` it.
    /// `readBuffer` is the loop's scratch memory for TLS reads.
    func handle(revents: Int16, readBuffer: UnsafeMutableBufferPointer<UInt8>) -> HTTPClientError? {
        switch state {
        case .resolving, .closed:
            return nil
        case .connecting:
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == EINPROGRESS { return nil }
            guard error == 0 else {
                lastConnectError = .connectionFailed("connect to \(host):\(port): \(String(cString: strerror(error)))")
                return connectNext()
            }
            do {
                (ssl, cipher) = try tls.makeSession(descriptor: descriptor, host: host, hostIsAddress: hostIsAddress)
            } catch {
                return error
            }
            state = .handshaking
            return handshake()
        case .handshaking:
            return handshake()
        case .ready:
            if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, let error = readAvailable(into: readBuffer) { return error }
            if wantsWrite, revents & Int16(POLLOUT | POLLHUP | POLLERR) != 0 { return flush() }
            return nil
        }
    }

    private func handshake() -> HTTPClientError? {
        guard let ssl else { return .transport(code: -1, message: "no TLS session") }
        // The records of the last step first; the next step only once the socket took them.
        if let error = sendCipher() { return error }
        if wantsWrite { return nil }
        OpenSSLErrorQueue.clear()
        let status = SSL_do_handshake(ssl)
        if status != 1 {
            switch SSL_get_error(ssl, status) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return sendCipher()
            default:
                // The alert, if one was made, goes out best effort: the handshake's own
                // failure is what decides the retry (a certificate that does not verify is
                // configuration, not a lost connection).
                _ = sendCipher()
                let verify = SSL_get_verify_result(ssl)
                if verify != X509_V_OK {
                    return .tlsVerificationFailed(
                        "\(host): \(String(cString: X509_verify_cert_error_string(verify))), trusting \(tls.trust.origin)")
                }
                return .connectionFailed("TLS handshake with \(host):\(port) failed: \(OpenSSLErrorQueue.drain(or: "no detail"))")
            }
        }
        if let error = sendCipher() { return error }
        var protocolName: UnsafePointer<UInt8>?
        var protocolLength: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &protocolName, &protocolLength)
        guard let protocolName, protocolLength == 2, protocolName[0] == UInt8(ascii: "h"), protocolName[1] == UInt8(ascii: "2")
        else { return .connectionFailed("\(host):\(port) did not negotiate HTTP/2 (ALPN h2)") }
        return startSession()
    }

    /// The client preface: no server push, a 1 MiB window per stream and 16 MiB for the
    /// connection, so responses never wait for WINDOW_UPDATEs.
    private func startSession() -> HTTPClientError? {
        var created: OpaquePointer?
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_client_new(&created, callbacks.pointer, context) == 0, let created else {
            return .transport(code: -1, message: "nghttp2_session_client_new failed")
        }
        session = created
        let settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        guard nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), settings, settings.count) == 0,
              nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24) == 0
        else { return .transport(code: -1, message: "cannot send the HTTP/2 preface") }
        state = .ready
        return flush()
    }

    // MARK: - Streams

    /// Starts `exchange` as a new stream; false if this connection can take no more streams
    /// (it is then draining, and the exchange is untouched).
    func submit(_ exchange: Exchange) -> Bool {
        guard let session, state == .ready else { return false }
        let streamID = RequestHeaders.withNameValues(for: exchange) { nameValues in
            if exchange.request.method == .post {
                var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: requestBodyCallback)
                return nghttp2_submit_request(session, nil, nameValues.baseAddress, nameValues.count, &provider, nil)
            }
            return nghttp2_submit_request(session, nil, nameValues.baseAddress, nameValues.count, nil, nil)
        }
        guard streamID > 0 else {
            // Out of stream ids (or memory): finish what runs here, start new work elsewhere.
            isDraining = true
            return false
        }
        exchange.streamID = streamID
        streams[streamID] = exchange
        return true
    }

    /// Abandons a stream (timed out or cancelled): RST_STREAM(CANCEL) goes out with the
    /// next flush, and nothing more is reported for it.
    func abandon(_ exchange: Exchange) {
        guard exchange.streamID > 0, removeStream(exchange.streamID) != nil else { return }
        if let session {
            abandoned[exchange.streamID] = exchange
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), exchange.streamID, NGHTTP2_CANCEL.rawValue)
        }
    }

    /// Asks the server for a PING ACK: a connection whose request timed out may be dead
    /// without either side having seen a reset.
    func sendPing(now: ContinuousClock.Instant) {
        guard let session, pingSentAt == nil else { return }
        if nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 { pingSentAt = now }
    }

    /// Sends GOAWAY(NO_ERROR) once no stream is left: the polite end of a connection.
    func terminate() {
        isDraining = true
        if let session { _ = nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue) }
    }

    // MARK: - Bytes

    /// Reads everything TLS has and feeds it to nghttp2, whose callbacks report each
    /// finished stream to the delegate.
    private func readAvailable(into buffer: UnsafeMutableBufferPointer<UInt8>) -> HTTPClientError? {
        guard let ssl, let session else { return nil }
        while true {
            OpenSSLErrorQueue.clear()
            var count = 0
            if SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count) == 1 {
                let consumed = nghttp2_session_mem_recv(session, buffer.baseAddress, count)
                if consumed < 0 {
                    return .connectionFailed("HTTP/2 protocol error from \(host): \(String(cString: nghttp2_strerror(Int32(consumed))))")
                }
                continue
            }
            switch SSL_get_error(ssl, 0) {
            case SSL_ERROR_WANT_READ:
                // (Never WANT_WRITE: the session writes into memory, and what it wrote while
                // reading goes out with the pass's flush.)
                return nil
            case SSL_ERROR_ZERO_RETURN:
                return .connectionFailed("\(host) closed the connection")
            case SSL_ERROR_SYSCALL:
                let reason = errno == 0 ? "end of stream" : String(cString: strerror(errno))
                return .connectionFailed("connection to \(host) lost: \(reason)")
            default:
                return .connectionFailed("TLS error from \(host): \(OpenSSLErrorQueue.drain(or: "no detail"))")
            }
        }
    }

    /// Moves frames from nghttp2 through TLS to the socket until nghttp2 has nothing more or
    /// the socket is full (then `wantsWrite`, and `poll` says when to go on). Up to 64 KiB
    /// of frames are encrypted at once, into memory, and sent in one system call.
    func flush() -> HTTPClientError? {
        guard let ssl, let session, state == .ready else { return nil }
        while true {
            // Nothing more from nghttp2 while the socket has not taken what TLS made.
            if let error = sendCipher() { return error }
            if wantsWrite { return nil }
            outbound.removeAll(keepingCapacity: true)
            while outbound.count < Self.outboundHighWater {
                var data: UnsafePointer<UInt8>?
                let count = nghttp2_session_mem_send(session, &data)
                if count < 0 {
                    return .connectionFailed("HTTP/2 error towards \(host): \(String(cString: nghttp2_strerror(Int32(count))))")
                }
                guard count > 0, let data else { break }
                outbound.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
            }
            if outbound.isEmpty { return nil }
            // Into the cipher BIO, which takes everything: one call, all the records.
            OpenSSLErrorQueue.clear()
            var written = 0
            let status = outbound.withUnsafeBytes { bytes in SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &written) }
            guard status == 1, written == outbound.count else {
                return .connectionFailed("TLS error towards \(host): \(OpenSSLErrorQueue.drain(or: "no detail"))")
            }
        }
    }

    /// Sends the ciphertext TLS left in `cipher`: one system call unless the socket fills
    /// (then `wantsWrite`). What the socket took is dropped from the BIO, not copied out.
    private func sendCipher() -> HTTPClientError? {
        guard let cipher, descriptor >= 0 else { return nil }
        while true {
            var data: UnsafePointer<UInt8>?
            let pending = pushd_cipher_bio_pending(cipher, &data)
            guard pending > 0, let data else {
                wantsWrite = false
                return nil
            }
            let sent = send(descriptor, data, pending, Int32(MSG_NOSIGNAL))
            if sent < 0 {
                switch errno {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK:
                    wantsWrite = true
                    delegate.connectionFoundSocketFull(self)
                    return nil
                default:
                    return .connectionFailed("connection to \(host) lost while writing: \(String(cString: strerror(errno)))")
                }
            }
            pushd_cipher_bio_consume(cipher, sent)
        }
    }

    // MARK: - Closing

    /// Closes the connection and hands back the streams still in flight, for the loop to
    /// fail. Callbacks arriving after this are ignored.
    func close() -> [Exchange] {
        // What TLS still holds (an alert after a failed read, a GOAWAY), best effort.
        _ = sendCipher()
        let remaining = Array(streams.values)
        streams.removeAll()
        recentStream = nil
        state = .closed
        release()
        return remaining
    }

    private func release() {
        if let session { nghttp2_session_del(session) }
        session = nil
        abandoned.removeAll()
        if let ssl { SSL_free(ssl) }  // frees `cipher` too
        ssl = nil
        cipher = nil
        closeSocket()
    }

    private func closeSocket() {
        if descriptor >= 0 { Foundation.close(descriptor) }
        descriptor = -1
    }

    // MARK: - From nghttp2's callbacks

    private func exchange(onStream id: Int32) -> Exchange? {
        if let recentStream, recentStream.id == id { return recentStream.exchange }
        guard let exchange = streams[id] else { return nil }
        recentStream = (id, exchange)
        return exchange
    }

    private func removeStream(_ id: Int32) -> Exchange? {
        if recentStream?.id == id { recentStream = nil }
        return streams.removeValue(forKey: id)
    }

    func received(status: Int, for streamID: Int32) {
        guard let exchange = exchange(onStream: streamID) else { return }
        exchange.status = status
        // A final response after an interim one (1xx) starts its headers afresh.
        exchange.responseHeaders.removeAll()
    }

    /// One response header, as nghttp2 hands it over (names arrive lower-cased: nghttp2
    /// rejects any other). Only the headers the request asked for become Strings.
    func received(header name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, for streamID: Int32) {
        guard let exchange = exchange(onStream: streamID) else { return }
        if let wanted = exchange.request.responseHeaderNames {
            var isWanted = false
            for wantedName in wanted where RequestHeaders.equals(name, string: wantedName) {
                isWanted = true
                break
            }
            guard isWanted else { return }
        }
        // A push keeps one header or none (APNs's `apns-id` on success, nothing from FCM):
        // held inline in `HTTPHeaders`, no storage allocated.
        exchange.responseHeaders[String(decoding: name, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
    }

    /// Appends body bytes; past the response size limit the stream is reset instead.
    func received(body: UnsafeBufferPointer<UInt8>, for streamID: Int32) {
        guard let exchange = exchange(onStream: streamID) else { return }
        guard exchange.responseBody.count + body.count <= Exchange.maximumResponseBytes else {
            exchange.resetReason = .transport(code: -1, message: "response larger than \(Exchange.maximumResponseBytes) bytes")
            if let session {
                _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
            }
            return
        }
        exchange.responseBody.append(contentsOf: body)
    }

    func closed(streamID: Int32, errorCode: UInt32) {
        guard let exchange = removeStream(streamID) else {
            if !abandoned.isEmpty { abandoned[streamID] = nil }
            return
        }
        if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            delegate.connection(self, refused: exchange)
        } else if let reason = exchange.resetReason {
            delegate.connection(self, finished: exchange, with: .failure(reason))
        } else if errorCode == NGHTTP2_NO_ERROR.rawValue, exchange.status > 0 {
            delegate.connection(self, finished: exchange, with: .success(exchange.takeResponse()))
        } else {
            let why = String(cString: nghttp2_http2_strerror(errorCode))
            delegate.connection(self, finished: exchange, with: .failure(.connectionFailed("stream closed by \(host): \(why)")))
        }
    }

    func receivedGoAway() {
        isDraining = true
    }

    func receivedPingAck() {
        pingSentAt = nil
    }

    func receivedSettings() {
        serverSettingsReceived = true
    }

    /// Copies the next part of a request body into nghttp2's frame buffer.
    func requestBody(for streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let exchange = exchange(onStream: streamID) else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        // Read where it lies: a local copy of the body cost a retain and a release per call.
        let sent = exchange.bodySent
        let (count, total) = exchange.request.body.withUnsafeBufferPointer { source -> (Int, Int) in
            let count = min(length, source.count - sent)
            if count > 0, let base = source.baseAddress { buffer.update(from: base + sent, count: count) }
            return (max(count, 0), source.count)
        }
        exchange.bodySent += count
        if exchange.bodySent == total { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }
}
