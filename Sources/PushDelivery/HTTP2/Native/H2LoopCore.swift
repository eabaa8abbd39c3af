import Foundation
import PushRuntime
import Synchronization

/// The state of a native HTTP/2 engine's loop thread: requests waiting for a stream, the
/// connections per host, and the deadlines. Everything here runs on that one thread.
///
/// Each pass schedules waiting requests onto connections with room (opening one more per
/// host, up to the limit, only when all are full), flushes what nghttp2 has to send,
/// enforces deadlines, and after `poll` lets each ready connection read. The work per pass
/// follows the events, not the number of requests in flight.
final class H2LoopCore: H2ConnectionDelegate {
    struct Configuration: Sendable {
        var maximumConnectionsPerHost: Int
        var maximumStreamsPerConnection: Int
        var connectTimeout: Duration
    }

    /// How long a connection whose request timed out gets to answer a PING before it is
    /// treated as dead.
    static let pingTimeout: Duration = .seconds(5)

    private let configuration: Configuration
    private let tls: TLSClientContext
    private let callbacks: H2SessionCallbacks
    private let logger: Logger
    /// Starts a background lookup for a connection's host; the answer comes back through
    /// the inbox as `resolved(connectionID:_:)`.
    private let resolveInBackground: (_ connectionID: Int, _ host: String, _ port: Int) -> Void
    private let counters: H2EngineCounters

    /// Every request not yet answered (for cancellation and deadlines).
    private var outstanding = OutstandingExchanges()
    /// Requests waiting for a stream, per host and port, oldest first. A host's queue stays
    /// while it has a connection, empty or not: dropped whenever a pass emptied it, it was
    /// allocated and hashed in again for the next request, most passes.
    private var waiting: [String: WaitingQueue] = [:]
    /// The queue a request was last added to: a worker's requests go to one or two hosts, and
    /// the key is the origin's own string, so the comparison is a pointer's where a lookup in
    /// `waiting` hashed the key for every request. Dropped with the queue (`dropQueue`).
    private var lastQueue: (key: String, queue: WaitingQueue)?
    private var connections: [String: [H2Connection]] = [:]
    private var connectionsByID: [Int: H2Connection] = [:]
    private var nextConnectionID = 1
    /// No deadline can expire before this; until then a pass skips the deadline scan.
    private var nextDeadline = ContinuousClock.now
    let readBuffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 64 * 1024)

    init(
        configuration: Configuration, tls: TLSClientContext, callbacks: H2SessionCallbacks, logger: Logger,
        resolveInBackground: @escaping (Int, String, Int) -> Void, counters: H2EngineCounters
    ) {
        self.configuration = configuration
        self.tls = tls
        self.callbacks = callbacks
        self.logger = logger
        self.resolveInBackground = resolveInBackground
        self.counters = counters
    }

    deinit {
        outstanding.removeAll()
        readBuffer.deallocate()
    }

    var isIdle: Bool { outstanding.isEmpty }

    // MARK: - From the inbox

    func accept(_ exchange: Exchange) {
        if let group = exchange.group, group.isCancelled {
            exchange.complete(.failure(.cancelled))
            return
        }
        outstanding.insert(exchange)
        queue(for: exchange.target.connectionKey).append(exchange)
        nextDeadline = min(nextDeadline, exchange.deadline)
    }

    /// Ends a request its sender gave up on, if the loop still holds it.
    func cancel(_ exchange: Exchange) {
        guard exchange.isOutstanding else { return }
        abandon(exchange)
        finish(exchange, with: .failure(.cancelled))
    }

    /// Cancels the group's requests still outstanding: a walk over them all, but only when a
    /// job is cancelled (a worker stopping), never per request.
    func cancel(_ group: RequestGroup) {
        for exchange in outstanding.all where exchange.group === group {
            abandon(exchange)
            finish(exchange, with: .failure(.cancelled))
        }
    }

    func resolved(connectionID: Int, _ result: Result<[SocketAddress], HTTPClientError>) {
        guard let connection = connectionsByID[connectionID], connection.state == .resolving else { return }
        switch result {
        case .success(let addresses):
            if let error = connection.begin(addresses: addresses) { fail(connection, with: error) }
        case .failure(let error):
            fail(connection, with: error)
        }
    }

    // MARK: - One pass

    /// Puts waiting requests on streams, sends, and enforces deadlines.
    func prepareForPoll(now: ContinuousClock.Instant) {
        if now >= nextDeadline { enforceDeadlines(now: now) }
        schedule(now: now)
        for connection in connectionsByID.values where connection.state == .ready {
            if let error = connection.flush() {
                fail(connection, with: error)
            } else if connection.isDraining, connection.streams.isEmpty {
                // GOAWAY received or ids used up, and nothing left in flight.
                connection.terminate()
                _ = connection.flush()
                close(connection)
            }
        }
    }

    /// The sockets to wait on, with their events.
    func pollDescriptors(into descriptors: inout [pollfd], owners: inout [Int]) {
        for connection in connectionsByID.values {
            let events = connection.pollEvents
            guard events != 0, connection.descriptor >= 0 else { continue }
            descriptors.append(pollfd(fd: connection.descriptor, events: events, revents: 0))
            owners.append(connection.id)
        }
    }

    /// How long `poll` may sleep: until the next deadline, at most a second.
    func pollTimeoutMilliseconds(now: ContinuousClock.Instant) -> Int32 {
        let wait = min(nextDeadline - now, .seconds(1))
        guard wait > .zero else { return 0 }
        return Int32(clamping: wait.milliseconds)
    }

    func handle(revents: Int16, connectionID: Int) {
        guard let connection = connectionsByID[connectionID] else { return }
        let wasReady = connection.state == .ready
        if let error = connection.handle(revents: revents, readBuffer: readBuffer) {
            fail(connection, with: error)
            return
        }
        if !wasReady, connection.state == .ready {
            logger.debug("http2 connection ready", ["host": .string(connection.host), "port": .int(connection.port)])
        }
    }

    /// Closes every connection (the loop is ending).
    func closeAll() {
        for connection in Array(connectionsByID.values) {
            if connection.state == .ready {
                connection.terminate()
                _ = connection.flush()
            }
            close(connection)
        }
        for exchange in outstanding.all { finish(exchange, with: .failure(.shutDown)) }
    }

    // MARK: - Scheduling

    private func queue(for key: String) -> WaitingQueue {
        if let lastQueue, lastQueue.key == key { return lastQueue.queue }
        let queue = waiting[key] ?? WaitingQueue()
        waiting[key] = queue
        lastQueue = (key, queue)
        return queue
    }

    /// Forgets the host's queue (it holds nothing the loop still has to send).
    private func dropQueue(for key: String) {
        waiting[key] = nil
        if lastQueue?.key == key { lastQueue = nil }
    }

    private func schedule(now: ContinuousClock.Instant) {
        var abandoned: [String] = []
        for (key, queue) in waiting where !queue.isEmpty {
            // Looked up once per host, and again only after `open` added a connection: one
            // opened for an earlier request in this pass is "opening" and must stop the next
            // from opening yet another. (A copy never refreshed did not see it, and a burst
            // over the spread threshold opened a connection per request: 58 at once.)
            var hosts = connections[key] ?? []
            while let next = queue.first {
                if next.isFinished {
                    queue.removeFirst()
                    continue
                }
                let connection = leastBusy(hosts)
                if connection == nil || connection.map({ $0.streams.count >= spreadThreshold }) == true {
                    // All full, or busy enough that another connection (up to the limit)
                    // should share the load: one server process or TLS session per
                    // connection caps what one connection carries.
                    let opening = hosts.contains { $0.state != .ready && $0.state != .closed }
                    let usable = hosts.count(where: { !$0.isDraining })
                    if !opening, usable < configuration.maximumConnectionsPerHost {
                        open(for: next.target, now: now)
                        hosts = connections[key] ?? []
                    }
                }
                guard let connection else { break }
                if connection.submit(next) {
                    next.connectionID = connection.id
                    queue.removeFirst()
                }
            }
            // Every request finished before a connection was even opened (cancelled or
            // timed out at once): nothing will close the host's queue, so drop it here.
            if queue.isEmpty, hosts.isEmpty { abandoned.append(key) }
        }
        for key in abandoned where waiting[key]?.isEmpty == true { dropQueue(for: key) }
    }

    /// The ready connection with room and the fewest streams in flight.
    private func leastBusy(_ hosts: [H2Connection]) -> H2Connection? {
        var best: H2Connection?
        for connection in hosts where connection.hasRoom {
            if best.map({ connection.streams.count < $0.streams.count }) ?? true { best = connection }
        }
        return best
    }

    /// Streams on the least busy connection from which another one is opened (while the
    /// host has fewer than `maximumConnectionsPerHost`): a quarter of a connection's
    /// streams, so load spreads before any connection is full.
    private var spreadThreshold: Int { max(1, configuration.maximumStreamsPerConnection / 4) }

    private func open(for target: RequestTarget, now: ContinuousClock.Instant) {
        let connection = H2Connection(
            id: nextConnectionID, target: target, connectTimeout: configuration.connectTimeout,
            maximumStreams: configuration.maximumStreamsPerConnection, tls: tls, callbacks: callbacks,
            delegate: self, now: now)
        nextConnectionID += 1
        counters.connectionsOpened.add(1, ordering: .relaxed)
        connections[target.connectionKey, default: []].append(connection)
        connectionsByID[connection.id] = connection
        nextDeadline = min(nextDeadline, connection.connectDeadline)
        logger.debug("http2 connecting", ["host": .string(target.host), "port": .int(target.port)])
        if connection.hostIsAddress {
            resolved(connectionID: connection.id, SocketAddress.resolve(host: target.host, port: target.port, numericOnly: true))
        } else {
            resolveInBackground(connection.id, target.host, target.port)
        }
    }

    // MARK: - Deadlines

    private func enforceDeadlines(now: ContinuousClock.Instant) {
        var next = now + .seconds(1)
        for exchange in outstanding.all {
            if exchange.deadline <= now {
                if let connection = connectionsByID[exchange.connectionID], exchange.streamID > 0 {
                    connection.sendPing(now: now)
                }
                abandon(exchange)
                finish(exchange, with: .failure(.timedOut))
            } else {
                next = min(next, exchange.deadline)
            }
        }
        for connection in Array(connectionsByID.values) {
            if connection.state != .ready {
                if connection.connectDeadline <= now {
                    fail(connection, with: .timedOut)
                } else {
                    next = min(next, connection.connectDeadline)
                }
            } else if let ping = connection.pingSentAt {
                if ping + Self.pingTimeout <= now {
                    fail(connection, with: .connectionFailed("\(connection.host) did not answer a PING within 5 s"))
                } else {
                    next = min(next, ping + Self.pingTimeout)
                }
            }
        }
        nextDeadline = next
    }

    // MARK: - Endings

    /// Takes a request off its stream, if it has one (nothing more is reported for it).
    private func abandon(_ exchange: Exchange) {
        guard exchange.streamID > 0 else { return }
        connectionsByID[exchange.connectionID]?.abandon(exchange)
    }

    private func finish(_ exchange: Exchange, with result: Result<HTTPResponse, HTTPClientError>) {
        outstanding.remove(exchange)
        exchange.complete(result)
    }

    /// A connection failed: its streams fail with `error`; if it never became ready and no
    /// other connection to that host is alive or coming, the requests waiting for it fail
    /// too (the same error a transfer of its own would have met).
    private func fail(_ connection: H2Connection, with error: HTTPClientError) {
        let neverReady = connection.state != .ready
        let remaining = close(connection)
        logger.info("http2 connection failed", [
            "host": .string(connection.host), "port": .int(connection.port), "error": .string(error.description),
            "streams": .int(remaining.count),
        ])
        for exchange in remaining { finish(exchange, with: .failure(error)) }
        guard neverReady, (connections[connection.connectionKey] ?? []).isEmpty, let queue = waiting[connection.connectionKey]
        else { return }
        while let next = queue.first {
            queue.removeFirst()
            if !next.isFinished { finish(next, with: .failure(error)) }
        }
        dropQueue(for: connection.connectionKey)
    }

    @discardableResult
    private func close(_ connection: H2Connection) -> [Exchange] {
        let remaining = connection.close()
        connectionsByID[connection.id] = nil
        connections[connection.connectionKey]?.removeAll { $0 === connection }
        if connections[connection.connectionKey]?.isEmpty == true {
            connections[connection.connectionKey] = nil
            if waiting[connection.connectionKey]?.isEmpty == true { dropQueue(for: connection.connectionKey) }
        }
        return remaining
    }

    // MARK: - H2ConnectionDelegate

    func connection(_ connection: H2Connection, finished exchange: Exchange, with result: Result<HTTPResponse, HTTPClientError>) {
        finish(exchange, with: result)
    }

    func connectionFoundSocketFull(_ connection: H2Connection) {
        counters.socketFull.add(1, ordering: .relaxed)
    }

    func connection(_ connection: H2Connection, refused exchange: Exchange) {
        guard !exchange.isFinished else { return }
        exchange.rewind()
        queue(for: exchange.target.connectionKey).append(exchange)
    }
}

/// The waiting requests of one host, oldest first. A class around a `FIFOQueue`, so that
/// taking from it in place never copies the queue (a struct kept in the dictionary and
/// mutated through a copy duplicated the whole queue on every pass).
final class WaitingQueue {
    private var items = FIFOQueue<Exchange>()

    var isEmpty: Bool { items.isEmpty }
    var first: Exchange? { items.first }

    func append(_ exchange: Exchange) { items.append(exchange) }
    func removeFirst() { items.removeFirst() }
}

/// What an engine's loop counts, for tests and diagnostics: written on the loop thread, read
/// from any.
final class H2EngineCounters: Sendable {
    /// Connections opened (each one a TCP connection and a TLS session).
    let connectionsOpened = Atomic<Int>(0)
    /// Times a connection's socket took less than was ready to send (a peer slower than the
    /// frames are made), so the rest waited for POLLOUT.
    let socketFull = Atomic<Int>(0)
}
