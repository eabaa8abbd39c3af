import CRabbitMQ
import CRabbitMQShims
import Foundation
import PushTLS

/// One rabbitmq-c connection: socket, login and pushd's two channels. The thin C-facing
/// layer under `AMQPConnection`, owned by its `ConnectionWorker`.
///
/// Not Sendable and not thread-safe, like rabbitmq-c itself: it is created, used and
/// destroyed on the connection's own thread only, and every method blocks that thread.
/// Once a connection-level error has happened (`failure` is set) it is never used again;
/// the worker replaces it.
final class RawConnection {
    /// Publishing (in confirm mode) and consuming.
    static let dataChannel: amqp_channel_t = 1
    /// Declarations and inspections. The broker answers a missing or mismatching object by
    /// closing the channel; on its own channel that costs nothing but a re-open, while on
    /// the data channel it would take every delivery and publish in flight down with it.
    static let adminChannel: amqp_channel_t = 2

    let state: amqp_connection_state_t
    let configuration: AMQPConfiguration
    /// The broker this connection is to: one of `configuration.endpoints`.
    let endpoint: AMQPEndpoint
    private var adminChannelOpen = false
    /// The connection-level error that made this connection unusable, if any.
    private(set) var failure: QueueError?

    /// Connects, logs in, opens the data channel and puts it in confirm mode.
    init(configuration: AMQPConfiguration, endpoint: AMQPEndpoint) throws(QueueError) {
        guard let state = amqp_new_connection() else {
            throw .library(operation: "amqp_new_connection", status: AMQP_STATUS_NO_MEMORY.rawValue, message: "out of memory")
        }
        self.state = state
        self.configuration = configuration
        self.endpoint = endpoint
        try openSocket()
        limitUnacknowledgedSends()
        try login()
        _ = amqp_channel_open(state, Self.dataChannel)
        try check(amqp_get_rpc_reply(state), "channel.open", channel: Self.dataChannel)
        _ = amqp_confirm_select(state, Self.dataChannel)
        try check(amqp_get_rpc_reply(state), "confirm.select", channel: Self.dataChannel)
    }

    deinit {
        // Closes the socket too (without the AMQP close handshake: see `close`).
        amqp_destroy_connection(state)
    }

    /// The negotiated heartbeat in seconds (0: none).
    var heartbeatSeconds: Int { Int(amqp_get_heartbeat(state)) }

    var socketDescriptor: Int32 { amqp_get_sockfd(state) }

    /// Whether rabbitmq-c holds input already read from the socket, which `poll` cannot see.
    var hasBufferedInput: Bool {
        amqp_frames_enqueued(state) != 0 || amqp_data_in_buffer(state) != 0
    }

    /// The AMQP close handshake, bounded by `timeout`: tells the broker we are leaving on
    /// purpose (it requeues our unacknowledged deliveries either way).
    func close(timeout: Duration) {
        guard failure == nil else { return }
        var limit = timeval(timeout)
        amqp_set_rpc_timeout(state, &limit)
        _ = amqp_connection_close(state, AMQP_REPLY_SUCCESS)
        failure = .closed
    }

    func markFailed(_ error: QueueError) {
        failure = error
    }

    /// Opens the admin channel if a broker error closed it (or it was never opened).
    func ensureAdminChannel() throws(QueueError) {
        guard !adminChannelOpen else { return }
        _ = amqp_channel_open(state, Self.adminChannel)
        try check(amqp_get_rpc_reply(state), "channel.open", channel: Self.adminChannel)
        adminChannelOpen = true
    }

    func adminChannelClosed() {
        adminChannelOpen = false
    }

    private func openSocket() throws(QueueError) {
        let endpoint = self.endpoint.description
        let socket: OpaquePointer?
        var trust: CACertificates?
        if let tls = configuration.tls {
            socket = amqp_ssl_socket_new(state)
            guard let socket else { throw .tlsFailed(endpoint: endpoint, reason: "cannot create a TLS socket") }
            // The CA certificates as this process parsed them once (`CACertificates`): the
            // same store as the HTTP/2 clients' for the system's, not read again for every
            // connection by `amqp_ssl_socket_set_cacert`.
            let certificates: CACertificates
            do { certificates = try tls.trustedCertificates() } catch {
                throw .tlsFailed(endpoint: endpoint, reason: error.description)
            }
            guard let context = amqp_ssl_socket_get_context(socket) else {
                throw .tlsFailed(endpoint: endpoint, reason: "the TLS socket has no OpenSSL context")
            }
            certificates.install(in: OpaquePointer(context))
            trust = certificates
            if let certificate = tls.clientCertificateFile, let key = tls.clientKeyFile {
                guard amqp_ssl_socket_set_key(socket, certificate, key) == AMQP_STATUS_OK.rawValue else {
                    throw .tlsFailed(endpoint: endpoint, reason: "cannot load client certificate \(certificate) or key \(key)")
                }
            }
            amqp_ssl_socket_set_verify_peer(socket, 1)
            amqp_ssl_socket_set_verify_hostname(socket, 1)
            _ = amqp_ssl_socket_set_ssl_versions(socket, AMQP_TLSv1_2, AMQP_TLSvLATEST)
        } else {
            socket = amqp_tcp_socket_new(state)
        }
        guard let socket else {
            throw .library(operation: "amqp_tcp_socket_new", status: AMQP_STATUS_NO_MEMORY.rawValue, message: "cannot create a socket")
        }
        var timeout = timeval(configuration.connectTimeout)
        let status = amqp_socket_open_noblock(socket, self.endpoint.host, Int32(self.endpoint.port), &timeout)
        guard status == AMQP_STATUS_OK.rawValue else {
            // errno is not meaningful here: rabbitmq-c connects without blocking and reads
            // the outcome with getsockopt, so errno still says "in progress".
            var reason = Self.describe(status)
            if status == AMQP_STATUS_SOCKET_ERROR.rawValue { reason += " (refused, unreachable or reset)" }
            if status == AMQP_STATUS_SSL_PEER_VERIFY_FAILED.rawValue, let trust { reason += ", trusting \(trust.origin)" }
            switch status {
            case AMQP_STATUS_SSL_ERROR.rawValue, AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED.rawValue,
                 AMQP_STATUS_SSL_PEER_VERIFY_FAILED.rawValue, AMQP_STATUS_SSL_CONNECTION_FAILED.rawValue:
                throw .tlsFailed(endpoint: endpoint, reason: reason)
            default:
                throw .connectFailed(endpoint: endpoint, reason: reason)
            }
        }
    }

    /// rabbitmq-c waits without limit for a full socket buffer to drain. Should the broker's
    /// host vanish without closing the connection (a partition, a dead VM), a publish would
    /// then block this thread for the kernel's retransmission timeout (15 minutes or more),
    /// and heartbeats could not be checked meanwhile. TCP_USER_TIMEOUT makes the kernel
    /// drop the connection once sent data has gone unacknowledged for two heartbeats.
    private func limitUnacknowledgedSends() {
        let descriptor = socketDescriptor
        guard descriptor >= 0 else { return }
        let heartbeat = configuration.heartbeat > .zero ? configuration.heartbeat : .seconds(60)
        var milliseconds = UInt32(clamping: Topology.milliseconds(heartbeat * 2 + .seconds(5)))
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, &milliseconds, socklen_t(MemoryLayout<UInt32>.size))
    }

    private func login() throws(QueueError) {
        var handshake = timeval(configuration.connectTimeout)
        amqp_set_handshake_timeout(state, &handshake)
        var rpc = timeval(configuration.rpcTimeout)
        amqp_set_rpc_timeout(state, &rpc)

        let arena = CArena()
        // The capabilities tell RabbitMQ we handle consumer cancellation and blocked
        // notifications, and want an authentication failure reported, not a dropped socket.
        var properties = arena.table([
            "connection_name": .string(configuration.connectionName),
            "product": "pushd",
            "capabilities": .table([
                "authentication_failure_close": true,
                "basic.nack": true,
                "connection.blocked": true,
                "consumer_cancel_notify": true,
                "publisher_confirms": true,
            ]),
        ])
        let heartbeat = Int32(clamping: configuration.heartbeat.components.seconds)
        let reply = pushd_amqp_login_plain_with_properties(
            state, configuration.virtualHost, 0, Int32(configuration.frameMax), heartbeat, &properties,
            configuration.user, configuration.password)
        do {
            try check(reply, "login", channel: 0)
        } catch {
            switch error {
            case .connectionClosedByBroker(let code, let text):
                throw .loginRefused(user: configuration.user, virtualHost: configuration.virtualHost, reason: "\(code) \(text)")
            default:
                throw error
            }
        }
    }
}

extension timeval {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}

extension TLSOptions {
    /// The CA certificates this broker's certificate must chain to: the configured CA file,
    /// else the system's store (OpenSSL's default paths, shared with the HTTP/2 clients).
    func trustedCertificates() throws(CAFileError) -> CACertificates {
        if let caCertificateFile { return try CACertificates.shared(path: caCertificateFile) }
        return try CACertificates.system()
    }
}
