import PushRuntime

/// Where an `https://` request goes: the connection it can share (`connectionKey`) and the
/// `:authority` and `:path` it asks for.
///
/// Parsed on the bytes, once per request: the delivery URLs are plain
/// `https://host[:port]/path`, and going through Foundation (`URL`, or even
/// `StringProtocol.contains`) cost 4% of a worker's CPU.
struct RequestTarget: Sendable, Equatable {
    /// The scheme and authority of a URL, parsed once and shared by every request that goes
    /// there (see `init(url:reusing:)`).
    final class Origin: Sendable, Equatable {
        /// The host as written, without brackets for IPv6 literals.
        let host: String
        let port: Int
        /// `host[:port]` (IPv6 in brackets), the `:authority` pseudo-header.
        let authority: String
        /// Connections are shared by host and port.
        let connectionKey: String
        /// `https://` and the authority, as the URL spelled them.
        fileprivate let prefix: [UInt8]

        fileprivate init(host: String, port: Int, authority: String) {
            self.host = host
            self.port = port
            self.authority = authority
            self.connectionKey = "\(host)|\(port)"
            self.prefix = RequestTarget.scheme + Array(authority.utf8)
        }

        static func == (left: Origin, right: Origin) -> Bool {
            left.host == right.host && left.port == right.port && left.authority == right.authority
        }
    }

    let origin: Origin
    /// Path and query, at least "/".
    let path: String

    var host: String { origin.host }
    var port: Int { origin.port }
    var authority: String { origin.authority }
    var connectionKey: String { origin.connectionKey }

    enum ParseError: Error, Equatable {
        case notHTTPS
        case malformed(String)
    }

    init(url: String) throws(ParseError) {
        try self.init(url: url, reusing: [])
    }

    /// Parses `url`, taking its origin from `known` when the URL starts with one of them
    /// (the same `https://` and authority, then the path, the query or nothing): what the
    /// parse would have found, without reading the authority again or making its strings.
    /// A push's URL differs from the last one only in its path.
    init(url: String, reusing known: [Origin]) throws(ParseError) {
        self = try Self.parse(url: url, reusing: known).target
    }

    /// `init(url:reusing:)`, and whether the origin came from `known` (one pass over them:
    /// a second, to ask whether it was there, retained each origin again on every push).
    static func parse(url: String, reusing known: [Origin]) throws(ParseError) -> (target: RequestTarget, reused: Bool) {
        let parsed = url.withUTF8InPlace { bytes -> Result<(Origin, String, Bool), ParseError> in
            for origin in known {
                if let path = Self.path(of: bytes, after: origin.prefix) { return .success((origin, path, true)) }
            }
            return Self.parse(bytes).map { host, port, authority, path in
                (Origin(host: host, port: port, authority: authority), path, false)
            }
        }
        switch parsed {
        case .success(let (origin, path, reused)): return (RequestTarget(origin: origin, path: path), reused)
        case .failure(let error): throw error
        }
    }

    private init(origin: Origin, path: String) {
        self.origin = origin
        self.path = path
    }

    /// The path and query of `bytes` if they start with `prefix` and the authority ends
    /// there; nil otherwise.
    private static func path(of bytes: UnsafeBufferPointer<UInt8>, after prefix: [UInt8]) -> String? {
        guard bytes.count >= prefix.count, bytes.starts(with: prefix) else { return nil }
        guard bytes.count > prefix.count else { return "/" }
        let rest = UnsafeBufferPointer(rebasing: bytes[prefix.count...])
        switch rest[0] {
        case UInt8(ascii: "/"): return String(decoding: rest, as: UTF8.self)
        case UInt8(ascii: "?"): return "/" + String(decoding: rest, as: UTF8.self)
        default: return nil
        }
    }

    fileprivate static let scheme = Array("https://".utf8)

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<(String, Int, String, String), ParseError> {
        guard bytes.count > scheme.count, bytes.starts(with: scheme) else { return .failure(.notHTTPS) }
        let start = scheme.count
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?") { end += 1 }
        let authority = UnsafeBufferPointer(rebasing: bytes[start..<end])
        func text() -> String { String(decoding: bytes, as: UTF8.self) }
        // No user information, no whitespace or control characters, something there.
        guard !authority.isEmpty, !authority.contains(where: { $0 == UInt8(ascii: "@") || $0 <= 0x20 || $0 == 0x7F }) else {
            return .failure(.malformed("no usable host in \(text())"))
        }
        var hostRange = 0..<authority.count
        var portRange: Range<Int>?
        if authority[0] == UInt8(ascii: "[") {
            // An IPv6 literal: [address] or [address]:port.
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                return .failure(.malformed("unclosed IPv6 literal in \(text())"))
            }
            hostRange = 1..<close
            if close + 1 < authority.count {
                guard authority[close + 1] == UInt8(ascii: ":") else {
                    return .failure(.malformed("text after the IPv6 literal in \(text())"))
                }
                portRange = (close + 2)..<authority.count
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostRange = 0..<colon
            portRange = (colon + 1)..<authority.count
        }
        var port = 443
        if let portRange {
            guard !portRange.isEmpty, portRange.count <= 5,
                  authority[portRange].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else { return .failure(.malformed("bad port in \(text())")) }
            port = authority[portRange].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard (1...65535).contains(port) else { return .failure(.malformed("bad port in \(text())")) }
        }
        guard !hostRange.isEmpty else { return .failure(.malformed("no host in \(text())")) }
        let host = String(decoding: UnsafeBufferPointer(rebasing: authority[hostRange]), as: UTF8.self)
        let authorityText = String(decoding: authority, as: UTF8.self)
        var path = String(decoding: UnsafeBufferPointer(rebasing: bytes[end...]), as: UTF8.self)
        if path.isEmpty { path = "/" } else if bytes[end] == UInt8(ascii: "?") { path = "/" + path }
        return .success((host, port, authorityText, path))
    }
}
