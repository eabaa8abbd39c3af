import Foundation
import PushRuntime

extension StoreConfiguration {
    /// Why this configuration would let libpq talk to a remote server without verified TLS:
    /// a non-loopback host with any `sslmode` but `verify-full` (`require` checks no
    /// certificate, `verify-ca` not the host name, so either lets a machine in the middle read
    /// the password). nil when it is safe. Read from libpq's own parse of the URL, the one it
    /// connects with, and from the `PG*` variables libpq applies to what the URL leaves out;
    /// the host it connects to is `hostaddr` when given.
    public var insecureTransportProblem: String? {
        insecureTransportProblem(environment: ProcessInfo.processInfo.environment)
    }

    public func insecureTransportProblem(environment: [String: String]) -> String? {
        func value(_ key: String, _ variable: String) -> String? {
            parameters[key] ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        let mode = value("sslmode", "PGSSLMODE") ?? "prefer"
        guard mode != "verify-full" else { return nil }
        // No host: libpq uses the local Unix-domain socket.
        let hosts = [value("host", "PGHOST"), value("hostaddr", "PGHOSTADDR")].compactMap { $0 }
            .flatMap { $0.split(separator: ",").map(String.init) }
        let remote = hosts.filter { !$0.isEmpty && !LoopbackHost.contains($0) }
        guard !remote.isEmpty else { return nil }
        return "database_url: sslmode=\(mode) to \(remote.joined(separator: ", ")), which is not loopback: use sslmode=verify-full, or set allow_insecure_transport"
    }
}
