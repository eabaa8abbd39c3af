extension MetricsServer {
    /// The whole HTTP response to one request head. Only the request line is read: the
    /// endpoint has no request bodies and no use for headers.
    static func response(to head: [UInt8], registry: MetricsRegistry, isReady: @Sendable () -> Bool) -> [UInt8] {
        let requestLine = String(decoding: head, as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = requestLine.split(separator: " ")
        let method = parts.first.map(String.init) ?? ""
        let path = parts.count > 1 ? String(parts[1].split(separator: "?").first ?? "") : ""
        let (status, contentType, body): (String, String, String)
        switch (method, path) {
        case ("GET", "/metrics"):
            (status, contentType, body) = ("200 OK", "text/plain; version=0.0.4; charset=utf-8", registry.render())
        case ("GET", "/health/live"):
            (status, contentType, body) = ("200 OK", "text/plain", "live\n")
        case ("GET", "/health/ready"):
            (status, contentType, body) = isReady()
                ? ("200 OK", "text/plain", "ready\n") : ("503 Service Unavailable", "text/plain", "not ready\n")
        case ("GET", _):
            (status, contentType, body) = ("404 Not Found", "text/plain", "not found\n")
        default:
            (status, contentType, body) = ("405 Method Not Allowed", "text/plain", "method not allowed\n")
        }
        return plain(status: status, contentType: contentType, body: body)
    }

    /// For a request head over the size limit.
    static let tooLarge = plain(status: "431 Request Header Fields Too Large", contentType: "text/plain", body: "request too large\n")

    private static func plain(status: String, contentType: String, body: String) -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
    }
}
