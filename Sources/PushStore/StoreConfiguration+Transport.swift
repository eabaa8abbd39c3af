import PushRuntime

extension StoreConfiguration {
    /// Why this configuration would let libpq talk to a remote server without TLS (or with
    /// TLS it may silently drop): a non-loopback host with `sslmode` other than `require`,
    /// `verify-ca` or `verify-full`. nil when it is safe. Read from libpq's own parse of the
    /// URL, the one it connects with.
    public var insecureTransportProblem: String? {
        let mode = parameters["sslmode"] ?? "prefer"
        guard !["require", "verify-ca", "verify-full"].contains(mode) else { return nil }
        // No host: libpq uses the local Unix-domain socket.
        let hosts = (parameters["host"] ?? parameters["hostaddr"] ?? "").split(separator: ",").map(String.init)
        let remote = hosts.filter { !$0.isEmpty && !LoopbackHost.contains($0) }
        guard !remote.isEmpty else { return nil }
        return "database_url: sslmode=\(mode) to \(remote.joined(separator: ", ")), which is not loopback: use sslmode=verify-full, or set allow_insecure_transport"
    }
}
