/// Where an `https://` request goes: the connection it can share (`connectionKey`) and the
/// `:authority` and `:path` it asks for.
///
/// Parsed on the bytes, once per request: the delivery URLs are plain
/// `https://host[:port]/path`, and going through Foundation (`URL`, or even
/// `StringProtocol.contains`) cost 4% of a worker's CPU.
struct RequestTarget: Sendable, Equatable {
    /// The host as written, without brackets for IPv6 literals.
    let host: String
    let port: Int
    /// `host[:port]` (IPv6 in brackets), the `:authority` pseudo-header.
    let authority: String
    /// Path and query, at least "/".
    let path: String

    enum ParseError: Error, Equatable {
        case notHTTPS
        case malformed(String)
    }

    init(url: String) throws(ParseError) {
        var url = url
        let parsed = url.withUTF8 { bytes in Self.parse(bytes) }
        guard case .success(let parts) = parsed else {
            if case .failure(let error) = parsed { throw error }
            throw .notHTTPS
        }
        (host, port, authority, path) = parts
        connectionKey = "\(host)|\(port)"
    }

    /// Connections are shared by host and port.
    let connectionKey: String

    private static let scheme = Array("https://".utf8)

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
