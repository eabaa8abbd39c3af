import Glibc

extension String {
    /// Calls `body` with the string's UTF-8 bytes where they lie: native and small strings,
    /// all there is on Linux (anything else is copied first).
    ///
    /// For the per-push paths: the standard `withUTF8` is mutating, so calling it on a
    /// `let` needs `var copy = text`, and that copy costs a retain and a release of the
    /// string's storage. On a string shared by the threads that seal and send (a job's
    /// template, a header name), each of those is an atomic on a cache line the other cores
    /// write too.
    @inlinable @inline(__always)
    public func withUTF8InPlace<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        return try Array(utf8).withUnsafeBufferPointer(body)
    }
}

extension String {
    /// The text of `bytes` if they are valid UTF-8, nil if not: what
    /// `String(validating: bytes, as: UTF8.self)` answers, for a fraction of its cost.
    ///
    /// The standard initialiser validates through generic code over the encoding, about 13
    /// instructions a byte (callgrind: a thousand for each string of a job, a fifth of taking
    /// a job in). Decoding runs the standard library's fast UTF-8 check and copy, and replaces
    /// what is not UTF-8 with U+FFFD; so the bytes are valid exactly when the text holds them
    /// unchanged (a U+FFFD already in the input is valid and stays as it was).
    public init?(validUTF8 bytes: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasUTF8(UnsafeRawBufferPointer(bytes)) else { return nil }
        self = text
    }

    /// Whether `bytes` are exactly this string's UTF-8: lengths first, then `memcmp`, with
    /// no copy of either side.
    public func hasUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        withUTF8InPlace { stored in
            guard stored.count == bytes.count else { return false }
            guard let storedBase = stored.baseAddress, let base = bytes.baseAddress else { return true }
            return memcmp(storedBase, base, bytes.count) == 0
        }
    }
}
