/// Request headers that many requests share, encoded once for the nghttp2 engine: names
/// lower-cased, the headers HTTP/2 forbids dropped, each field's HPACK indexing decided.
///
/// A push's headers are mostly the same for every device of a job (the provider token, the
/// topic, the push type, the priority, the expiration, the collapse id); building them as
/// Strings for each push, then copying and lower-casing them again on the loop thread, and
/// freeing them there, was a cost of every push. A request points at a shared block
/// (`HTTPRequest.sharedHeaders`) and nghttp2 reads the fields straight from it.
public final class HeaderBlock: Sendable {
    /// One field: where its name and value lie in `bytes`.
    struct Field: Sendable {
        let nameStart: Int
        let nameLength: Int
        let valueStart: Int
        let valueLength: Int
        let indexed: Bool
    }

    /// The headers as given, for the libcurl engine (which takes them as text).
    public let headers: [(name: String, value: String)]
    let bytes: [UInt8]
    let fields: [Field]
    /// Whether one of the fields is `content-length` (then none is added).
    let hasContentLength: Bool

    /// - Parameters:
    ///   - headers: names and values; names are lower-cased here.
    ///   - uniqueHeaderNames: lower-case names whose values are not to enter the HPACK
    ///     table (see `HTTPRequest.uniqueHeaderNames`).
    public init(_ headers: [(name: String, value: String)], uniqueHeaderNames: [String] = []) {
        self.headers = headers
        var bytes: [UInt8] = []
        var fields: [Field] = []
        var hasContentLength = false
        for header in headers {
            let nameStart = bytes.count
            bytes.append(contentsOf: header.name.utf8)
            let name = bytes.withUnsafeMutableBufferPointer { buffer -> String? in
                let stored = UnsafeMutableBufferPointer(rebasing: buffer[nameStart...])
                RequestHeaders.lowercaseASCII(stored)
                return RequestHeaders.isForbidden(UnsafeBufferPointer(stored)) ? nil : String(decoding: stored, as: UTF8.self)
            }
            guard let name else {
                bytes.removeSubrange(nameStart...)
                continue
            }
            if name == "content-length" { hasContentLength = true }
            let valueStart = bytes.count
            bytes.append(contentsOf: header.value.utf8)
            fields.append(Field(
                nameStart: nameStart, nameLength: valueStart - nameStart, valueStart: valueStart, valueLength: bytes.count - valueStart,
                indexed: !uniqueHeaderNames.contains(name)))
        }
        self.bytes = bytes
        self.fields = fields
        self.hasContentLength = hasContentLength
    }
}
