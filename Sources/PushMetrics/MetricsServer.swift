import Foundation
import PushRuntime
import Synchronization

/// A tiny HTTP/1.1 endpoint for Prometheus and orchestrators:
/// `GET /metrics` (the registry), `GET /health/live` (the process answers),
/// `GET /health/ready` (200 while `isReady` says so, else 503).
///
/// One dedicated thread multiplexes every connection with `poll`, on non-blocking sockets:
/// the requests are rare and tiny, and this keeps them off the cooperative pool that the
/// worker's encryption uses. Clients are served side by side, each within `clientTimeout`,
/// so a client that connects and sends nothing (or reads nothing) cannot delay the liveness
/// probe that would otherwise get the pod restarted; nor can clients holding every place
/// (`maximumClients`): a new one takes the place of the oldest still silent. Writes use
/// `MSG_NOSIGNAL`: a client that hangs up early costs its own connection, never a SIGPIPE.
public final class MetricsServer: Service {
    public let name = "metrics"
    private let registry: MetricsRegistry
    private let host: String
    private let port: Int
    private let limits: Limits
    private let isReady: @Sendable () -> Bool
    private let onListening: @Sendable (Int) -> Void
    private let logger: Logger

    /// How long one client may take, and how many may be connected at once.
    public struct Limits: Sendable {
        public var clientTimeout: Duration = .seconds(5)
        public var maximumClients = 64
        /// A request head larger than this is answered 431 and closed.
        public var maximumRequestBytes = 8192

        public init() {}
    }

    /// `onListening` receives the port actually bound (useful with `port: 0`).
    public init(
        registry: MetricsRegistry, host: String = "0.0.0.0", port: Int, limits: Limits = Limits(), logger: Logger,
        onListening: @escaping @Sendable (Int) -> Void = { _ in }, isReady: @escaping @Sendable () -> Bool
    ) {
        self.registry = registry
        self.host = host
        self.port = port
        self.limits = limits
        self.isReady = isReady
        self.onListening = onListening
        self.logger = logger
    }

    public func run(shutdown: ShutdownSignal) async throws {
        let listener = try Self.listen(host: host, port: port)
        let boundPort = Self.boundPort(of: listener)
        logger.info("metrics endpoint listening", ["host": .string(host), "port": .int(boundPort)])
        onListening(boundPort)
        let stop = ShutdownSignal()
        let finished = ShutdownSignal()
        let loop = ConnectionLoop(
            listener: listener, limits: limits,
            respond: { [registry, isReady] request in Self.response(to: request, registry: registry, isReady: isReady) })
        ThreadName.startThread(named: "pushd-metrics") {
            loop.run(until: stop)
            finished.trigger()
        }
        // Returns on shutdown or when the group gives up and cancels us; either way the
        // thread is told to stop, so it never outlives the service with its port bound.
        await shutdown.wait()
        stop.trigger()
        await finished.wait()
    }

    public struct ListenError: Error, CustomStringConvertible {
        public let description: String
    }

    static func listen(host: String, port: Int) throws(ListenError) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ListenError(description: "socket() failed: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(descriptor)
            throw ListenError(description: "metrics host \(host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(descriptor, 64) == 0 else {
            let error = errno
            close(descriptor)
            throw ListenError(description: "cannot listen on \(host):\(port): errno \(error)")
        }
        return descriptor
    }

    static func boundPort(of descriptor: Int32) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return status == 0 ? Int(UInt16(bigEndian: address.sin_port)) : -1
    }
}
