import Foundation
import PushRuntime

/// A tiny HTTP/1.1 endpoint for Prometheus and orchestrators:
/// `GET /metrics` (the registry), `GET /health/live` (the process answers),
/// `GET /health/ready` (200 while `isReady` says so, else 503).
///
/// Blocking sockets on a dedicated thread: the requests are rare and tiny, and this keeps
/// them off the cooperative pool that the worker's encryption uses.
public final class MetricsServer: Service {
    public let name = "metrics"
    private let registry: MetricsRegistry
    private let host: String
    private let port: Int
    private let isReady: @Sendable () -> Bool
    private let logger: Logger

    public init(registry: MetricsRegistry, host: String = "0.0.0.0", port: Int, logger: Logger, isReady: @escaping @Sendable () -> Bool) {
        self.registry = registry
        self.host = host
        self.port = port
        self.isReady = isReady
        self.logger = logger
    }

    public func run(shutdown: ShutdownSignal) async throws {
        let listener = try Self.listen(host: host, port: port)
        logger.info("metrics endpoint listening", ["host": .string(host), "port": .int(port)])
        let finished = ShutdownSignal()
        let thread = Thread { [registry, isReady] in
            Self.serve(listener: listener, registry: registry, isReady: isReady, until: shutdown)
            close(listener)
            finished.trigger()
        }
        thread.name = "pushd-metrics"
        thread.start()
        await finished.wait()
    }

    public struct ListenError: Error, CustomStringConvertible {
        public let description: String
    }

    static func listen(host: String, port: Int) throws(ListenError) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ListenError(description: "socket() failed: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(descriptor, 16) == 0 else {
            let error = errno
            close(descriptor)
            throw ListenError(description: "cannot listen on \(host):\(port): errno \(error)")
        }
        return descriptor
    }

    /// Accepts and answers connections one at a time until shutdown, waking every 200 ms
    /// to notice it.
    static func serve(listener: Int32, registry: MetricsRegistry, isReady: @Sendable () -> Bool, until shutdown: ShutdownSignal) {
        while !shutdown.isTriggered {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            answer(client, registry: registry, isReady: isReady)
            close(client)
        }
    }

    static func answer(_ client: Int32, registry: MetricsRegistry, isReady: @Sendable () -> Bool) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let received = read(client, &buffer, buffer.count)
        guard received > 0 else { return }
        let requestLine = String(decoding: buffer[0..<received], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = requestLine.split(separator: " ")
        let method = parts.first.map(String.init) ?? ""
        let path = parts.count > 1 ? String(parts[1].split(separator: "?").first ?? "") : ""
        let (status, contentType, body): (String, String, String)
        switch (method, path) {
        case ("GET", "/metrics"):
            (status, contentType, body) = ("200 OK", "text/plain; version=0.0.4; charset=utf-8", registry.render())
        case ("GET", "/health/live"):
            (status, contentType, body) = ("200 OK", "text/plain", "live\n")
        case ("GET", "/health/ready"):
            (status, contentType, body) = isReady()
                ? ("200 OK", "text/plain", "ready\n") : ("503 Service Unavailable", "text/plain", "not ready\n")
        case ("GET", _):
            (status, contentType, body) = ("404 Not Found", "text/plain", "not found\n")
        default:
            (status, contentType, body) = ("405 Method Not Allowed", "text/plain", "method not allowed\n")
        }
        let response = "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        var bytes = Array(response.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return -1 }
                return write(client, base + offset, buffer.count - offset)
            }
            if written <= 0 { return }
            offset += written
        }
    }
}
