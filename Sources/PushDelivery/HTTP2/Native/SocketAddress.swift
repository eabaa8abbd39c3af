import Foundation
import PushRuntime

/// One resolved address to connect to: the raw `sockaddr` bytes and their family.
struct SocketAddress: Sendable {
    let family: Int32
    let bytes: [UInt8]

    /// The addresses of `host`, in the resolver's order. An IP literal needs no lookup
    /// (`AI_NUMERICHOST`); a name goes through `getaddrinfo`, which may block on DNS, so
    /// the loop calls `resolveInBackground` for those.
    static func resolve(host: String, port: Int, numericOnly: Bool) -> Result<[SocketAddress], HTTPClientError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (numericOnly ? AI_NUMERICHOST : AI_ADDRCONFIG)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            return .failure(.connectionFailed("cannot resolve \(host): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            if let address = entry.pointee.ai_addr, entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6 {
                let raw = UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen))
                addresses.append(SocketAddress(family: entry.pointee.ai_family, bytes: Array(raw)))
            }
            cursor = entry.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(.connectionFailed("no address for \(host)")) : .success(addresses)
    }

    /// Whether `host` is an IPv4 or IPv6 literal (certificate checked against an IP SAN, no SNI).
    static func isLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Resolves a name on a short-lived thread and hands the result to `done`, so a slow
    /// DNS server never stalls the loop (and every other connection with it).
    static func resolveInBackground(
        host: String, port: Int, done: @escaping @Sendable (Result<[SocketAddress], HTTPClientError>) -> Void
    ) {
        ThreadName.startThread(named: "pushd-resolve") { done(resolve(host: host, port: port, numericOnly: false)) }
    }
}
