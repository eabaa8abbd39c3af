import CNGHTTP2

/// The header block of a request as nghttp2 takes it: the four pseudo-headers, then the
/// request's own headers with lower-cased names. Headers that HTTP/2 forbids (connection-
/// specific ones) and `Expect` are left out; a POST gets `content-length`.
///
/// Built for every push, so it costs two temporary allocations and no Strings: names and
/// values are copied (names lower-cased) into one byte buffer, the `nghttp2_nv` entries
/// point into it, and `nghttp2_submit_request` copies the block before it is freed.
enum RequestHeaders {
    static func withNameValues<Result>(for exchange: Exchange, _ body: (UnsafeBufferPointer<nghttp2_nv>) -> Result) -> Result {
        let request = exchange.request
        var capacity = 96 + exchange.target.authority.utf8.count + exchange.target.path.utf8.count
        for header in request.headers { capacity += header.name.utf8.count + header.value.utf8.count }
        let shared = request.sharedHeaders
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { storage in
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: request.headers.count + (shared?.fields.count ?? 0) + 5) { fields in
                var block = Block(storage: storage, fields: fields, unique: request.uniqueHeaderNames)
                block.add(":method", request.method.rawValue, lowercasing: false)
                block.add(":scheme", "https", lowercasing: false)
                block.add(":authority", exchange.target.authority, lowercasing: false)
                block.add(":path", exchange.target.path, lowercasing: false)
                var hasLength = shared?.hasContentLength ?? false
                for header in request.headers {
                    guard let name = block.add(header.name, header.value, lowercasing: true) else { continue }
                    if name == .contentLength { hasLength = true }
                }
                if request.method == .post, !hasLength {
                    block.add("content-length", String(request.body.count), lowercasing: false)
                }
                guard let shared else { return body(UnsafeBufferPointer(rebasing: fields[..<block.fieldCount])) }
                // The shared fields point into the block itself, alive as long as the
                // request; nghttp2 copies every field before `nghttp2_submit_request` returns.
                return shared.bytes.withUnsafeBufferPointer { bytes in
                    block.add(shared.fields, in: bytes)
                    return body(UnsafeBufferPointer(rebasing: fields[..<block.fieldCount]))
                }
            }
        }
    }

    /// The names that get special treatment.
    enum Name {
        case contentLength, other
    }

    /// Appends fields to the two buffers. A struct with mutating methods, so the compiler
    /// needs no run-time exclusivity checks on the cursors.
    private struct Block {
        let storage: UnsafeMutableBufferPointer<UInt8>
        let fields: UnsafeMutableBufferPointer<nghttp2_nv>
        let unique: [String]
        var used = 0
        var fieldCount = 0

        /// Appends a shared block's fields, pointing into its bytes (already lower-cased
        /// and checked, see `HeaderBlock`).
        mutating func add(_ shared: [HeaderBlock.Field], in bytes: UnsafeBufferPointer<UInt8>) {
            guard let base = bytes.baseAddress else { return }
            let start = UnsafeMutablePointer(mutating: base)
            for field in shared {
                fields[fieldCount] = nghttp2_nv(
                    name: start + field.nameStart, value: start + field.valueStart, namelen: field.nameLength,
                    valuelen: field.valueLength,
                    flags: UInt8(field.indexed ? NGHTTP2_NV_FLAG_NONE.rawValue : NGHTTP2_NV_FLAG_NO_INDEX.rawValue))
                fieldCount += 1
            }
        }

        /// Appends one field; nil (and nothing appended) for a name HTTP/2 forbids.
        @discardableResult
        mutating func add(_ name: String, _ value: String, lowercasing: Bool) -> Name? {
            var name = name
            var value = value
            guard let base = storage.baseAddress else { return nil }
            let nameStart = used
            let kept = name.withUTF8 { bytes -> Bool in
                let stored = UnsafeMutableBufferPointer(rebasing: storage[used..<used + bytes.count])
                _ = stored.update(fromContentsOf: bytes)
                if lowercasing { RequestHeaders.lowercaseASCII(stored) }
                used += bytes.count
                return !RequestHeaders.isForbidden(UnsafeBufferPointer(stored))
            }
            guard kept else {
                used = nameStart
                return nil
            }
            let valueStart = used
            value.withUTF8 { bytes in
                _ = UnsafeMutableBufferPointer(rebasing: storage[used..<used + bytes.count]).update(fromContentsOf: bytes)
                used += bytes.count
            }
            let storedName = UnsafeBufferPointer(rebasing: storage[nameStart..<valueStart])
            let indexed = !unique.contains { RequestHeaders.equals(storedName, string: $0) }
            fields[fieldCount] = nghttp2_nv(
                name: base + nameStart, value: base + valueStart, namelen: valueStart - nameStart, valuelen: used - valueStart,
                flags: UInt8(indexed ? NGHTTP2_NV_FLAG_NONE.rawValue : NGHTTP2_NV_FLAG_NO_INDEX.rawValue))
            fieldCount += 1
            return RequestHeaders.equals(storedName, "content-length") ? .contentLength : .other
        }
    }

    /// A-Z to a-z in place, branch-free so the loop vectorises: it ran byte by byte, with a
    /// branch each, for every header name of every push.
    static func lowercaseASCII(_ bytes: UnsafeMutableBufferPointer<UInt8>) {
        for index in bytes.indices {
            let byte = bytes[index]
            bytes[index] = byte | (byte &- 0x41 < 26 ? 0x20 : 0)
        }
    }

    /// Connection-specific headers (RFC 9113 §8.2.2), `host` (`:authority` says it) and
    /// `expect` (no interim responses here), compared on lower-cased bytes.
    static func isForbidden(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        switch name.count {
        case 4: equals(name, "host")
        case 6: equals(name, "expect")
        case 7: equals(name, "upgrade")
        case 10: equals(name, "connection") || equals(name, "keep-alive")
        case 16: equals(name, "proxy-connection")
        case 17: equals(name, "transfer-encoding")
        default: false
        }
    }

    /// Lengths first: almost every comparison here is between names of different lengths,
    /// which `elementsEqual` would only find out byte by byte.
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount && text.withUTF8Buffer { bytes.elementsEqual($0) }
    }

    /// Through the string's contiguous bytes: comparing with its `utf8` view went through
    /// the generic iterator, one index at a time, for every header of every push. Lengths
    /// first (`utf8.count` is stored for native strings), so a name of another length costs
    /// neither a copy of the string nor a byte compared.
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, string text: String) -> Bool {
        guard bytes.count == text.utf8.count else { return false }
        var text = text
        return text.withUTF8 { bytes.elementsEqual($0) }
    }
}
