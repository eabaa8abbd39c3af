import CNGHTTP2
import Glibc
import PushRuntime

/// The header block of a request as nghttp2 takes it: the four pseudo-headers, then the
/// request's own headers with lower-cased names. Headers that HTTP/2 forbids (connection-
/// specific ones) and `Expect` are left out; a POST gets `content-length`.
///
/// Built for every push, with no Strings: names and values are copied (names lower-cased)
/// into the exchange's own header bytes (`Exchange.headerStorage`), the shared block's with
/// one copy, and the `nghttp2_nv` entries point into them with `NGHTTP2_NV_FLAG_NO_COPY_NAME`
/// and `_VALUE`: nghttp2 reads them there when it packs the frame, instead of copying every
/// field again (the provider token, some 250 bytes, among them) and lower-casing each name a
/// second time, byte by byte, for every push.
enum RequestHeaders {
    /// Calls `body` with the request's header block. The request is read where it lies in the exchange (which the caller keeps alive),
    /// its arrays through their buffers: a local copy of the request, or a `for` loop over
    /// one of its arrays, cost a retain and a release of each buffer, on every push.
    static func withNameValues<Result>(for exchange: Exchange, _ body: (UnsafeBufferPointer<nghttp2_nv>) -> Result) -> Result {
        exchange.request.headers.withUnsafeBufferPointer { headers in
            var capacity = 96 + exchange.target.authority.utf8.count + exchange.target.path.utf8.count
            for index in headers.indices { capacity += headers[index].name.utf8.count + headers[index].value.utf8.count }
            let sharedCount = exchange.request.sharedHeaders?.fields.count ?? 0
            capacity += exchange.request.sharedHeaders?.bytes.count ?? 0
            let storage = exchange.headerStorage(capacity: capacity)
            return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: headers.count + sharedCount + 5) { fields in
                exchange.request.uniqueHeaderNames.withUnsafeBufferPointer { unique in
                    var block = Block(storage: storage, fields: fields, unique: unique)
                    return block.build(for: exchange, headers: headers, body)
                }
            }
        }
    }

    /// Flags of a field whose name and value stay where they are until nghttp2 is done with
    /// them (see `Exchange.headerStorage`); `indexed` false keeps the value out of HPACK.
    static func flags(indexed: Bool) -> UInt8 {
        UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue
            | (indexed ? NGHTTP2_NV_FLAG_NONE.rawValue : NGHTTP2_NV_FLAG_NO_INDEX.rawValue))
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
        let unique: UnsafeBufferPointer<String>
        var used = 0
        var fieldCount = 0

        /// The pseudo-headers, the request's own headers, `content-length` for a POST
        /// without one, and the shared block's fields; `body` gets the finished list.
        mutating func build<Result>(
            for exchange: Exchange, headers: UnsafeBufferPointer<(name: String, value: String)>,
            _ body: (UnsafeBufferPointer<nghttp2_nv>) -> Result
        ) -> Result {
            let method = exchange.request.method
            add(":method", method.rawValue)
            add(":scheme", "https")
            add(":authority", exchange.target.authority)
            add(":path", exchange.target.path)
            var hasLength = exchange.request.sharedHeaders?.hasContentLength ?? false
            for index in headers.indices where add(headers[index].name, headers[index].value, lowercasing: true) == .contentLength {
                hasLength = true
            }
            if method == .post, !hasLength {
                add("content-length", String(exchange.request.body.count))
            }
            if let shared = exchange.request.sharedHeaders {
                shared.bytes.withUnsafeBufferPointer { bytes in
                    shared.fields.withUnsafeBufferPointer { sharedFields in add(sharedFields, copying: bytes) }
                }
            }
            return body(UnsafeBufferPointer(rebasing: fields[..<fieldCount]))
        }

        /// Appends a shared block's fields (already lower-cased and checked, see
        /// `HeaderBlock`), its bytes copied whole into `storage`.
        mutating func add(_ shared: UnsafeBufferPointer<HeaderBlock.Field>, copying bytes: UnsafeBufferPointer<UInt8>) {
            guard let source = bytes.baseAddress, let base = storage.baseAddress else { return }
            precondition(used + bytes.count <= storage.count, "header block larger than measured")
            let start = base + used
            start.update(from: source, count: bytes.count)
            used += bytes.count
            for field in shared {
                fields[fieldCount] = nghttp2_nv(
                    name: start + field.nameStart, value: start + field.valueStart, namelen: field.nameLength,
                    valuelen: field.valueLength, flags: RequestHeaders.flags(indexed: field.indexed))
                fieldCount += 1
            }
        }

        /// Appends one field; nil (and nothing appended) for a name HTTP/2 forbids.
        @discardableResult
        mutating func add(_ name: String, _ value: String, lowercasing: Bool) -> Name? {
            let nameStart = used
            let nameLength = append(name)
            let stored = UnsafeMutableBufferPointer(rebasing: storage[nameStart..<nameStart + nameLength])
            if lowercasing { RequestHeaders.lowercaseASCII(stored) }
            guard !RequestHeaders.isForbidden(UnsafeBufferPointer(stored)) else {
                used = nameStart
                return nil
            }
            return add(value, namedFrom: nameStart)
        }

        /// Appends a field of a name of this engine's own (a pseudo-header, `content-length`):
        /// lower case and allowed already, read from the literal, where a String name cost a
        /// retain and a release of its storage, four or five times for every push.
        @discardableResult
        mutating func add(_ name: StaticString, _ value: String) -> Name? {
            let nameStart = used
            name.withUTF8Buffer { bytes in
                precondition(used + bytes.count <= storage.count, "header block larger than measured")
                if let source = bytes.baseAddress, let base = storage.baseAddress {
                    (base + used).update(from: source, count: bytes.count)
                }
                used += bytes.count
            }
            return add(value, namedFrom: nameStart)
        }

        /// Appends `value` after the name stored from `nameStart`, and the field for both.
        private mutating func add(_ value: String, namedFrom nameStart: Int) -> Name? {
            guard let base = storage.baseAddress else { return nil }
            let valueStart = used
            append(value)
            let storedName = UnsafeBufferPointer(rebasing: storage[nameStart..<valueStart])
            var indexed = true
            for uniqueName in unique where RequestHeaders.equals(storedName, string: uniqueName) {
                indexed = false
                break
            }
            fields[fieldCount] = nghttp2_nv(
                name: base + nameStart, value: base + valueStart, namelen: valueStart - nameStart, valuelen: used - valueStart,
                flags: RequestHeaders.flags(indexed: indexed))
            fieldCount += 1
            return RequestHeaders.equals(storedName, "content-length") ? .contentLength : .other
        }

        /// Copies `text`'s bytes to `storage` at `used`, which moves past them; their count.
        /// Read in place (`withUTF8InPlace`): a copy of the String for the mutating `withUTF8`
        /// cost a retain and a release of its storage, several per header of every push.
        @discardableResult
        private mutating func append(_ text: String) -> Int {
            let count = text.withUTF8InPlace { bytes in
                precondition(used + bytes.count <= storage.count, "header block larger than measured")
                if let source = bytes.baseAddress, let base = storage.baseAddress {
                    (base + used).update(from: source, count: bytes.count)
                }
                return bytes.count
            }
            used += count
            return count
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
    /// which `elementsEqual` would only find out byte by byte. Then `memcmp`: the generic
    /// `elementsEqual` compared one byte per iteration, for every header of every push.
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount && text.withUTF8Buffer { sameBytes(bytes, $0) }
    }

    /// Whether the two hold the same bytes (`memcmp` once the lengths agree).
    @inline(__always)
    static func sameBytes(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
        guard left.count == right.count else { return false }
        guard let leftBase = left.baseAddress, let rightBase = right.baseAddress else { return left.isEmpty }
        return memcmp(leftBase, rightBase, left.count) == 0
    }

    /// Through the string's contiguous bytes: comparing with its `utf8` view went through
    /// the generic iterator, one index at a time, for every header of every push. Lengths
    /// first (`utf8.count` is stored for native strings), so a name of another length costs
    /// neither a copy of the string nor a byte compared.
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, string text: String) -> Bool {
        guard bytes.count == text.utf8.count else { return false }
        return text.withUTF8InPlace { sameBytes(bytes, $0) }
    }
}
