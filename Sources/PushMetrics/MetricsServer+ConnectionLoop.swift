import Foundation
import PushRuntime

extension MetricsServer {
    /// The `poll` loop of the metrics thread. It owns the listening socket and every client
    /// socket, and runs on that one thread only, from `run` until shutdown, after which it
    /// closes them all.
    struct ConnectionLoop: Sendable {
        let listener: Int32
        let limits: Limits
        let respond: @Sendable ([UInt8]) -> [UInt8]

        /// One client: its request head until complete, then its response until sent.
        private struct Client {
            let descriptor: Int32
            let deadline: ContinuousClock.Instant
            var request: [UInt8] = []
            var response: [UInt8]?
            var sent = 0
        }

        func run(until shutdown: ShutdownSignal) {
            var clients: [Client] = []
            // After an accept error other than "nothing pending" (out of descriptors, say) the
            // listener stays readable: pause accepting briefly rather than spin on it.
            var acceptingAgainAt = ContinuousClock.now
            while !shutdown.isTriggered {
                var descriptors = clients.map { client in
                    pollfd(fd: client.descriptor, events: Int16(client.response == nil ? POLLIN : POLLOUT), revents: 0)
                }
                // Listening even when full: a new client then takes the place of the oldest that
                // has not sent its request (`acceptPending`), so clients holding every place
                // cannot keep the liveness probe out.
                let accepting = ContinuousClock.now >= acceptingAgainAt
                if accepting { descriptors.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0)) }
                // Wake at least every 200 ms to notice shutdown and expired clients.
                guard poll(&descriptors, nfds_t(descriptors.count), 200) >= 0 || errno == EINTR else { break }
                let now = ContinuousClock.now
                var open: [Client] = []
                for (index, var client) in clients.enumerated() {
                    let events = descriptors[index].revents
                    let alive = now < client.deadline && (events == 0 || progress(&client, events: events))
                    if alive { open.append(client) } else { close(client.descriptor) }
                }
                clients = open
                if accepting, let listening = descriptors.last, listening.revents & Int16(POLLIN) != 0,
                   !acceptPending(into: &clients, now: now) {
                    acceptingAgainAt = now + .milliseconds(100)
                }
            }
            for client in clients { close(client.descriptor) }
            close(listener)
        }

        /// Accepts pending connections (at most the client limit's worth in one pass); at the
        /// limit, each new one closes the oldest client still waiting for its request (else
        /// the oldest). False after an accept error other than "nothing pending".
        private func acceptPending(into clients: inout [Client], now: ContinuousClock.Instant) -> Bool {
            for _ in 0..<max(1, limits.maximumClients) {
                let descriptor = accept(listener, nil, nil)
                guard descriptor >= 0 else { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                if clients.count >= limits.maximumClients, !clients.isEmpty {
                    // Accepted in order, so the first match is the oldest.
                    let evicted = clients.firstIndex { $0.response == nil } ?? 0
                    close(clients[evicted].descriptor)
                    clients.remove(at: evicted)
                }
                clients.append(Client(descriptor: descriptor, deadline: now + limits.clientTimeout))
            }
            return true
        }

        /// Reads or writes what the socket allows; false when the client is finished (its
        /// response sent, or it hung up or failed).
        private func progress(_ client: inout Client, events: Int16) -> Bool {
            if events & Int16(POLLERR | POLLNVAL) != 0 { return false }
            if client.response == nil {
                var buffer = [UInt8](repeating: 0, count: 2048)
                let received = recv(client.descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if received < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
                if received == 0 { return false }
                client.request += buffer[0..<received]
                if client.request.count > limits.maximumRequestBytes {
                    client.response = MetricsServer.tooLarge
                } else if Self.headComplete(client.request) {
                    client.response = respond(client.request)
                }
                return true
            }
            guard let response = client.response else { return false }
            let written = response.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return -1 }
                return send(client.descriptor, base + client.sent, bytes.count - client.sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if written < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
            client.sent += written
            return client.sent < response.count
        }

        /// Whether the request head has ended (a blank line).
        private static func headComplete(_ bytes: [UInt8]) -> Bool {
            let end: [UInt8] = [13, 10, 13, 10]
            guard bytes.count >= end.count else { return false }
            for start in stride(from: bytes.count - end.count, through: 0, by: -1) where bytes[start] == 13 {
                if Array(bytes[start..<(start + 4)]) == end { return true }
            }
            return false
        }
    }
}
