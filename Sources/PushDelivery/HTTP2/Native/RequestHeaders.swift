import CNGHTTP2

/// The header block of a request as nghttp2 takes it: the four pseudo-headers, then the
/// request's own headers with lower-cased names. Headers that HTTP/2 forbids (connection-
/// specific ones) and `Expect` are left out; a POST gets `content-length`.
///
/// All names and values go into one byte buffer and the `nghttp2_nv` entries point into
/// it; `nghttp2_submit_request` copies the block, so it only lives for the call. Built for
/// every push, so names are lower-cased byte by byte into that buffer, not as Strings.
enum RequestHeaders {
    private static let forbidden: [[UInt8]] = [
        "connection", "host", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "expect",
    ].map { Array($0.utf8) }
    private static let contentLength = Array("content-length".utf8)

    static func withNameValues<Result>(for exchange: Exchange, _ body: (UnsafeBufferPointer<nghttp2_nv>) -> Result) -> Result {
        let request = exchange.request
        var storage: [UInt8] = []
        var ranges: [(name: Range<Int>, value: Range<Int>)] = []
        ranges.reserveCapacity(request.headers.count + 5)
        storage.reserveCapacity(128 + request.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })

        func add(_ name: some Collection<UInt8>, _ value: some Collection<UInt8>) {
            let nameStart = storage.count
            storage.append(contentsOf: name)
            let valueStart = storage.count
            storage.append(contentsOf: value)
            ranges.append((nameStart..<valueStart, valueStart..<storage.count))
        }
        add(":method".utf8, request.method.rawValue.utf8)
        add(":scheme".utf8, "https".utf8)
        add(":authority".utf8, exchange.target.authority.utf8)
        add(":path".utf8, exchange.target.path.utf8)
        var hasLength = false
        for header in request.headers {
            let nameStart = storage.count
            for byte in header.name.utf8 { storage.append(byte >= 0x41 && byte <= 0x5A ? byte + 32 : byte) }
            let name = storage[nameStart...]
            if forbidden.contains(where: { $0.elementsEqual(name) }) {
                storage.removeSubrange(nameStart...)
                continue
            }
            if name.elementsEqual(contentLength) { hasLength = true }
            let valueStart = storage.count
            storage.append(contentsOf: header.value.utf8)
            ranges.append((nameStart..<valueStart, valueStart..<storage.count))
        }
        if request.method == .post, !hasLength { add(contentLength, String(request.body.count).utf8) }

        return storage.withUnsafeMutableBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
            let nameValues = ranges.map { range in
                nghttp2_nv(
                    name: base + range.name.lowerBound, value: base + range.value.lowerBound, namelen: range.name.count,
                    valuelen: range.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nameValues.withUnsafeBufferPointer(body)
        }
    }
}
