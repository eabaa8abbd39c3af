import PushRuntime
import Synchronization

/// An HTTP/2 client for many concurrent requests over few connections.
///
/// One thread owns every connection: by default nghttp2 over OpenSSL (`NativeHTTP2Loop`,
/// HTTPS with HTTP/2 only, what APNs, FCM and Google's OAuth endpoint speak); libcurl
/// (`CurlMultiLoop`) for the rest, HTTP/1.1 and cleartext HTTP/2, such as the emulator's
/// admin endpoints. Requests are multiplexed as streams on reused connections, at most
/// `maximumStreamsPerConnection` per connection and never more than the server's SETTINGS
/// allow. `send` is an ordinary async call: a
/// request goes in, its response comes back to the awaiting task; `submit` hands a request
/// over with a completion instead, for senders of many (no task or continuation per
/// request; see `RequestGroup` for cancelling them). At most `maximumInFlight` requests are
/// in flight; more callers wait (back-pressure).
///
/// The loop thread runs while the client runs as a `Service` (or after `start()`, for use
/// outside a service group); requests sent before wait for it.
public final class HTTP2Client: Service, RequestCanceller {
    public let name = "http2"

    /// Which library carries the requests.
    public enum Engine: Sendable {
        /// nghttp2 over OpenSSL: `https://` URLs only, HTTP/2 negotiated by ALPN.
        case nghttp2
        /// libcurl: HTTP/1.1 and HTTP/2, with or without TLS.
        case libcurl
    }

    public struct Configuration: Sendable {
        public var engine: Engine
        public var maximumInFlight: Int
        public var maximumConnectionsPerHost: Int
        public var maximumStreamsPerConnection: Int
        public var connectTimeout: Duration
        /// A CA bundle to verify servers against instead of the system's (e.g. the local
        /// emulator's CA). Verification itself is always on.
        public var caFile: String?
        /// HTTP/2 without TLS (h2c) for plain-text test servers.
        public var http2PriorKnowledge: Bool
        /// The loop thread's OS name (at most 15 bytes are kept): what `top -H` and the
        /// pipeline benchmark's CPU split by thread show.
        public var threadName: String

        /// `http2PriorKnowledge` (cleartext) implies libcurl.
        public init(
            engine: Engine = .nghttp2, maximumInFlight: Int = 1000, maximumConnectionsPerHost: Int = 2,
            maximumStreamsPerConnection: Int = 500, connectTimeout: Duration = .seconds(10), caFile: String? = nil,
            http2PriorKnowledge: Bool = false, threadName: String = "pushd-h2"
        ) {
            self.engine = http2PriorKnowledge ? .libcurl : engine
            self.maximumInFlight = maximumInFlight
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.maximumStreamsPerConnection = maximumStreamsPerConnection
            self.connectTimeout = connectTimeout
            self.caFile = caFile
            self.http2PriorKnowledge = http2PriorKnowledge
            self.threadName = threadName
        }

        /// The same configuration with the loop thread named `threadName`: each provider
        /// client names its own loop (`pushd-h2-apns`, `pushd-h2-fcm`, `pushd-h2-chan`).
        public func naming(_ threadName: String) -> Configuration {
            var named = self
            named.threadName = threadName
            return named
        }
    }

    private enum Loop {
        case native(NativeHTTP2Loop)
        case curl(CurlMultiLoop)
    }

    private let loop: Loop

    /// The TLS context the nghttp2 engine's connections are made from (nil on libcurl's).
    var tlsContext: TLSClientContext? {
        guard case .native(let loop) = loop else { return nil }
        return loop.tls
    }
    /// What the nghttp2 engine counts (nil on libcurl's engine, which does not say).
    var engineCounters: H2EngineCounters? {
        guard case .native(let native) = loop else { return nil }
        return native.counters
    }
    private let inFlight: AsyncSemaphore
    private let nextID = Atomic<UInt64>(0)
    /// The origins requests went to lately (a client talks to one or two hosts): a request
    /// to one of them reuses its parsed authority (see `RequestTarget.init(url:reusing:)`).
    private let recentOrigins = Mutex<[RequestTarget.Origin]>([])
    private static let recentOriginsKept = 4

    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "http2")) throws(HTTPClientError) {
        switch configuration.engine {
        case .nghttp2:
            loop = .native(try NativeHTTP2Loop(
                configuration: .init(
                    core: .init(
                        maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
                        maximumStreamsPerConnection: configuration.maximumStreamsPerConnection,
                        connectTimeout: configuration.connectTimeout),
                    caFile: configuration.caFile, threadName: configuration.threadName),
                logger: logger))
        case .libcurl:
            loop = .curl(try CurlMultiLoop(
                configuration: .init(
                    maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
                    maximumStreamsPerConnection: configuration.maximumStreamsPerConnection,
                    connectTimeout: configuration.connectTimeout, caFile: configuration.caFile,
                    http2PriorKnowledge: configuration.http2PriorKnowledge, threadName: configuration.threadName),
                logger: logger))
        }
        inFlight = AsyncSemaphore(permits: max(1, configuration.maximumInFlight))
    }

    /// Sends one request and returns its response. Cancelling the calling task aborts the
    /// request (`HTTPClientError.cancelled`).
    public nonisolated(nonsending) func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        do { try await inFlight.acquire() } catch { throw .cancelled }
        defer { inFlight.release() }
        let id = nextID.add(1, ordering: .relaxed).newValue
        switch loop {
        case .native(let native):
            return try await send(request, id: id, on: native)
        case .curl(let curl):
            return try await send(request, id: id, on: curl)
        }
    }

    private nonisolated(nonsending) func send(_ request: HTTPRequest, id: UInt64, on loop: NativeHTTP2Loop) async throws(HTTPClientError) -> HTTPResponse {
        let exchange = Exchange(id: id, request: request, target: try target(of: request), now: .now)
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Exchange.Result, Never>) in
                exchange.completion = .resume(continuation)
                if !loop.submit(exchange) {
                    exchange.complete(.failure(.shutDown))
                }
            }
        } onCancel: {
            loop.cancel(exchange)
        }
        return try result.get()
    }

    /// Sends one request without awaiting it: `completion` is called exactly once with the
    /// result, whatever happens (refused, cancelled with `group`, shut down).
    ///
    /// For senders of many requests at once (a worker's pushes): on the nghttp2 engine the
    /// request needs no task and no continuation of its own, and `completion` runs on the
    /// loop thread as the response arrives, so it must be short and never block: classify,
    /// record, hand anything slow to a task. This call itself waits only for an in-flight
    /// permit, the same back-pressure as `send`'s. (libcurl's engine runs the request in a
    /// task adopted by `group`, which waits for the permit and calls `completion`; this call
    /// then returns at once, and the caller's own limit is the only bound.)
    ///
    /// `request` is consumed: it moves into the exchange the loop owns, where a copy cost a
    /// retain and a release of each of its buffers, on every push.
    public nonisolated(nonsending) func submit(
        _ request: consuming HTTPRequest, group: RequestGroup,
        completion: @escaping @Sendable (Result<HTTPResponse, HTTPClientError>) -> Void
    ) async {
        guard case .native(let loop) = loop else {
            let request = copy request
            group.adopt(Task {
                let result: Result<HTTPResponse, HTTPClientError>
                do throws(HTTPClientError) { result = .success(try await self.send(request)) } catch { result = .failure(error) }
                completion(result)
            })
            return
        }
        do { try await inFlight.acquire() } catch {
            completion(.failure(.cancelled))
            return
        }
        let target: RequestTarget
        do { target = try self.target(of: request) } catch {
            inFlight.release()
            completion(.failure(error))
            return
        }
        let exchange = Exchange(id: nextID.add(1, ordering: .relaxed).newValue, request: request, target: target, group: group, now: .now)
        exchange.completion = .call(completion)
        exchange.permit = inFlight
        group.enlist(self)
        if !loop.submit(exchange) {
            exchange.complete(.failure(.shutDown))
        }
    }

    /// The engine's loop thread as a task executor (nghttp2 engine only): tasks that prefer
    /// it run on the thread that sends this client's requests (see `NativeHTTP2Loop`).
    public var loopExecutor: (any TaskExecutor)? {
        if case .native(let native) = loop { return native }
        return nil
    }

    func cancelRequests(of group: RequestGroup) {
        if case .native(let native) = loop { native.cancel(group) }
    }

    /// The request's parsed target, reusing a recent origin's authority.
    private func target(of request: borrowing HTTPRequest) throws(HTTPClientError) -> RequestTarget {
        // Parsed under the lock, against the origins where they lie: a copy of the array
        // taken out of the lock cost a retain and a release of its buffer on every request,
        // from every sealing thread at once. The parse of a known origin compares a prefix.
        let parsed = recentOrigins.withLock { known -> (Result<RequestTarget, RequestTarget.ParseError>, isKnown: Bool) in
            do throws(RequestTarget.ParseError) {
                let (target, reused) = try RequestTarget.parse(url: request.url, reusing: known)
                return (.success(target), reused)
            } catch {
                return (.failure(error), false)
            }
        }
        let target: RequestTarget
        switch parsed.0 {
        case .success(let parsedTarget): target = parsedTarget
        case .failure(let error): throw .transport(code: -1, message: "the nghttp2 engine sends https:// URLs only: \(error)")
        }
        if !parsed.isKnown {
            recentOrigins.withLock { origins in
                // Another request may have added the same origin since `known` was read.
                guard !origins.contains(target.origin) else { return }
                if origins.count == Self.recentOriginsKept { origins.removeFirst() }
                origins.append(target.origin)
            }
        }
        return target
    }

    private nonisolated(nonsending) func send(_ request: HTTPRequest, id: UInt64, on loop: CurlMultiLoop) async throws(HTTPClientError) -> HTTPResponse {
        let transfer = Transfer(id: id, request: request)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Transfer.Completion) in
                transfer.continuation = continuation
                if !loop.submit(transfer) {
                    transfer.complete(.failure(.shutDown))
                }
            }
        } onCancel: { [loop] in
            loop.cancel(transfer)
        }
        return try result.get()
    }

    /// Starts the loop thread, for a client used outside a service group. Idempotent.
    public func start() {
        switch loop {
        case .native(let native): native.start()
        case .curl(let curl): curl.start()
        }
    }

    /// Runs the loop until `shutdown`, then lets requests in flight finish and closes every
    /// connection. Stopped after the services that send (they stop first, in reverse order).
    public func run(shutdown: ShutdownSignal) async throws {
        start()
        await shutdown.wait()
        await self.shutdown()
    }

    /// Takes no new requests, lets those in flight finish, then closes every connection.
    public func shutdown() async {
        switch loop {
        case .native(let native):
            native.stop()
            await native.finished.wait()
        case .curl(let curl):
            curl.stop()
            await curl.finished.wait()
        }
    }
}
