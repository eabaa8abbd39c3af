import PushRuntime

extension AMQPConfiguration {
    /// Why this configuration would send credentials and jobs in clear text over a network:
    /// `amqp://` (no TLS) to a host that is not loopback. nil when it is safe. Read from the
    /// parsed endpoints, the very ones the connection uses.
    public var insecureTransportProblem: String? {
        guard tls == nil else { return nil }
        let remote = endpoints.filter { !LoopbackHost.contains($0.host) }
        guard !remote.isEmpty else { return nil }
        return "amqp_url: amqp:// (no TLS) to \(remote.map(\.description).joined(separator: ", ")), which is not loopback: use amqps://, or set allow_insecure_transport"
    }
}
