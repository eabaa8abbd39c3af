import Foundation

/// Groups an async sequence's elements into batches of at most `size`, closing a batch
/// early once `window` has passed since its first element.
struct BatchingSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
    typealias Element = [Base.Element]
    let base: Base
    let size: Int
    let window: Duration

    func makeAsyncIterator() -> AsyncThrowingStream<[Base.Element], any Error>.AsyncIterator {
        let (stream, continuation) = AsyncThrowingStream<[Base.Element], any Error>.makeStream()
        let pending = PendingBatch<Base.Element>()
        let task = Task {
            let flusher = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: window)
                    let batch = pending.take(olderThan: window)
                    if !batch.isEmpty { continuation.yield(batch) }
                }
            }
            var failure: (any Error)?
            do {
                for try await element in base {
                    if let full = pending.append(element, limit: size) { continuation.yield(full) }
                }
            } catch {
                failure = error
            }
            // The flusher may be between taking a batch and yielding it: let it finish before
            // the last batch is taken and the stream ends, or that batch would be dropped.
            flusher.cancel()
            await flusher.value
            let rest = pending.take(olderThan: .zero)
            if !rest.isEmpty { continuation.yield(rest) }
            continuation.finish(throwing: failure)
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream.makeAsyncIterator()
    }
}
