/// One broker address. A configuration lists one or more; the connection tries them in
/// order and moves to the next after every failure, so a cluster stays reachable while any
/// of its nodes is.
public struct AMQPEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port` (`[v6]:port`): what logs and errors name, never with credentials.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
