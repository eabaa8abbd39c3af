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
