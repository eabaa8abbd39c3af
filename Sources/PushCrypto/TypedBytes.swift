import Foundation

/// `withUnsafeBytes` on arrays and `ContiguousBytes` rethrows untyped errors; this keeps a
/// closure's typed error typed, so callers need no `as!` or catch-all.
func withBytes<T, E: Error>(
    _ bytes: some ContiguousBytes, _ body: (UnsafeRawBufferPointer) throws(E) -> T
) throws(E) -> T {
    let result: Result<T, E> = bytes.withUnsafeBytes { buffer in
        do throws(E) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    return try result.get()
}
