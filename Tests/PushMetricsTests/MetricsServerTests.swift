import Foundation
import PushMetrics
import PushRuntime
import Synchronization
import Testing

/// The metrics/health endpoint against real sockets: slow, silent and rude clients must
/// never keep the liveness probe from being answered, nor kill the process.
@Suite("Metrics endpoint")
struct MetricsServerTests {
    /// A running server on a free loopback port, stopped by `stop()`.
    struct RunningServer {
        let port: Int
        let shutdown: ShutdownSignal
        let task: Task<Void, any Error>

        static func start(limits: MetricsServer.Limits = .init()) async throws -> RunningServer {
            let registry = MetricsRegistry()
            registry.counter("pushd_test_total", help: "A test counter.").increment()
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            let server = MetricsServer(
                registry: registry, host: "127.0.0.1", port: 0, limits: limits, logger: Logger(label: "test.metrics"),
                onListening: { continuation.yield($0); continuation.finish() }, isReady: { true })
            let shutdown = ShutdownSignal()
            let task = Task { try await server.run(shutdown: shutdown) }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw SocketError(description: "the server never listened") }
            return RunningServer(port: port, shutdown: shutdown, task: task)
        }

        func stop() async throws {
            shutdown.trigger()
            try await task.value
        }
    }

    struct SocketError: Error, CustomStringConvertible {
        let description: String
    }

    /// A blocking client socket with a 10-second receive timeout, so a broken server fails
    /// the test instead of hanging it.
    static func connectClient(_ port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw SocketError(description: "connect failed: errno \(errno)") }
        return descriptor
    }

    static func sendAll(_ descriptor: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until the server closes the connection (or the 10-second timeout).
    static func readAll(_ descriptor: Int32) -> String {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            result += buffer[0..<count]
        }
        return String(decoding: result, as: UTF8.self)
    }

    static func get(_ path: String, port: Int) throws -> String {
        let client = try connectClient(port)
        defer { close(client) }
        sendAll(client, "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return readAll(client)
    }

    /// Whether the server has closed its side of `descriptor` (end of file is readable).
    static func closedByServer(_ descriptor: Int32) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test("silent clients that send nothing do not delay /health/live: it is answered while they are still connected")
    func silentClientsDoNotStarveLiveness() async throws {
        var limits = MetricsServer.Limits()
        limits.clientTimeout = .seconds(60)
        let server = try await RunningServer.start(limits: limits)
        let silent = try (0..<3).map { _ in try Self.connectClient(server.port) }
        let half = try Self.connectClient(server.port)
        Self.sendAll(half, "GET /metrics HTTP/1.1\r\n")  // a request head that never ends
        let live = try Self.get("/health/live", port: server.port)
        #expect(live.hasPrefix("HTTP/1.1 200 OK"), "\(live)")
        #expect(live.hasSuffix("live\n"))
        for descriptor in silent + [half] {
            #expect(!Self.closedByServer(descriptor), "the live probe was answered while the slow clients were still waiting")
            close(descriptor)
        }
        try await server.stop()
    }

    @Test("silent clients holding every place do not keep /health/live out: the oldest silent one gives up its place")
    func fullServerStillAnswersLiveness() async throws {
        var limits = MetricsServer.Limits()
        limits.clientTimeout = .seconds(60)
        limits.maximumClients = 4
        let server = try await RunningServer.start(limits: limits)
        let silent = try (0..<4).map { _ in try Self.connectClient(server.port) }
        // Without a place, the probe would wait in the listen backlog for the 60 s timeout
        // (and its read fail after 10 s).
        let live = try Self.get("/health/live", port: server.port)
        #expect(live.hasPrefix("HTTP/1.1 200 OK"), "\(live)")
        #expect(Self.readAll(silent[0]).isEmpty, "the oldest silent client was closed for the probe")
        for descriptor in silent[1...] { #expect(!Self.closedByServer(descriptor)) }
        for descriptor in silent { close(descriptor) }
        try await server.stop()
    }

    @Test("a client silent past the timeout is disconnected")
    func silentClientTimesOut() async throws {
        var limits = MetricsServer.Limits()
        limits.clientTimeout = .milliseconds(300)
        let server = try await RunningServer.start(limits: limits)
        let silent = try Self.connectClient(server.port)
        defer { close(silent) }
        #expect(Self.readAll(silent).isEmpty, "closed without a response (the read returns at end of file, not after the 10 s guard)")
        #expect(try Self.get("/health/live", port: server.port).hasPrefix("HTTP/1.1 200 OK"))
        try await server.stop()
    }

    @Test("clients that hang up before their response cost only their own connection, never a SIGPIPE")
    func resetClientsAreHarmless() async throws {
        let server = try await RunningServer.start()
        for _ in 0..<20 {
            let rude = try Self.connectClient(server.port)
            Self.sendAll(rude, "GET /metrics HTTP/1.1\r\n\r\n")
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)  // close with a reset
            setsockopt(rude, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(rude)
        }
        let metrics = try Self.get("/metrics", port: server.port)
        #expect(metrics.contains("pushd_test_total 1"), "\(metrics.prefix(300))")
        try await server.stop()
    }

    @Test("routes: ready, unknown path, wrong method, oversized request")
    func routes() async throws {
        var limits = MetricsServer.Limits()
        limits.maximumRequestBytes = 1024
        let server = try await RunningServer.start(limits: limits)
        #expect(try Self.get("/health/ready", port: server.port).hasPrefix("HTTP/1.1 200 OK"))
        #expect(try Self.get("/nope", port: server.port).hasPrefix("HTTP/1.1 404"))
        let client = try Self.connectClient(server.port)
        Self.sendAll(client, "POST /metrics HTTP/1.1\r\n\r\n")
        #expect(Self.readAll(client).hasPrefix("HTTP/1.1 405"))
        close(client)
        let large = try Self.connectClient(server.port)
        Self.sendAll(large, "GET /metrics HTTP/1.1\r\nX-Filler: \(String(repeating: "a", count: 2000))\r\n\r\n")
        #expect(Self.readAll(large).hasPrefix("HTTP/1.1 431"))
        close(large)
        try await server.stop()
    }
}
