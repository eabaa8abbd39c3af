import PushRuntime
import Synchronization

/// An HTTP/2 client for many concurrent requests over few connections, on libcurl.
///
/// One thread owns a libcurl multi handle (see `CurlMultiLoop`); requests are multiplexed
/// as streams on reused connections, at most `maximumStreamsPerConnection` per connection
/// and never more than the server's SETTINGS allow. `send` is an ordinary async call: a
/// request goes in, its response comes back to the awaiting task. At most
/// `maximumInFlight` requests are in flight; more callers wait (back-pressure).
///
/// The loop thread runs while the client runs as a `Service` (or after `start()`, for use
/// outside a service group); requests sent before wait for it.
public final class HTTP2Client: Service {
    public let name = "http2"

    public struct Configuration: Sendable {
        public var maximumInFlight: Int
        public var maximumConnectionsPerHost: Int
        public var maximumStreamsPerConnection: Int
        public var connectTimeout: Duration
        /// A CA bundle to verify servers against instead of the system's (e.g. the local
        /// emulator's CA). Verification itself is always on.
        public var caFile: String?
        /// HTTP/2 without TLS (h2c) for plain-text test servers.
        public var http2PriorKnowledge: Bool

        public init(
            maximumInFlight: Int = 1000, maximumConnectionsPerHost: Int = 2, maximumStreamsPerConnection: Int = 500,
            connectTimeout: Duration = .seconds(10), caFile: String? = nil, http2PriorKnowledge: Bool = false
        ) {
            self.maximumInFlight = maximumInFlight
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.maximumStreamsPerConnection = maximumStreamsPerConnection
            self.connectTimeout = connectTimeout
            self.caFile = caFile
            self.http2PriorKnowledge = http2PriorKnowledge
        }
    }

    private let loop: CurlMultiLoop
    private let inFlight: AsyncSemaphore
    private let nextID = Atomic<UInt64>(0)

    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "http2")) throws(HTTPClientError) {
        loop = try CurlMultiLoop(
            configuration: .init(
                maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
                maximumStreamsPerConnection: configuration.maximumStreamsPerConnection,
                connectTimeout: configuration.connectTimeout, caFile: configuration.caFile,
                http2PriorKnowledge: configuration.http2PriorKnowledge),
            logger: logger)
        inFlight = AsyncSemaphore(permits: max(1, configuration.maximumInFlight))
    }

    /// Sends one request and returns its response. Cancelling the calling task aborts the
    /// request (`HTTPClientError.cancelled`).
    public func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        do { try await inFlight.acquire() } catch { throw .cancelled }
        defer { inFlight.release() }
        let transfer = Transfer(id: nextID.add(1, ordering: .relaxed).newValue, request: request)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Transfer.Completion) in
                transfer.continuation = continuation
                if !loop.submit(transfer) {
                    transfer.complete(.failure(.shutDown))
                }
            }
        } onCancel: { [loop, id = transfer.id] in
            loop.cancel(id)
        }
        return try result.get()
    }

    /// Starts the loop thread, for a client used outside a service group. Idempotent.
    public func start() {
        loop.start()
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
        loop.stop()
        await loop.finished.wait()
    }
}
