import Synchronization

/// The batch being filled, shared by the reading task and the timer that flushes it.
final class PendingBatch<Element: Sendable>: Sendable {
    private struct State {
        var elements: [Element] = []
        var firstAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    /// Appends; returns the full batch when `limit` is reached.
    func append(_ element: Element, limit: Int) -> [Element]? {
        state.withLock { state in
            if state.elements.isEmpty { state.firstAt = .now }
            state.elements.append(element)
            guard state.elements.count >= limit else { return nil }
            defer { state.elements = []; state.firstAt = nil }
            return state.elements
        }
    }

    /// Takes the batch if its first element is at least `age` old.
    func take(olderThan age: Duration) -> [Element] {
        state.withLock { state in
            guard let first = state.firstAt, ContinuousClock.now - first >= age else { return [] }
            defer { state.elements = []; state.firstAt = nil }
            return state.elements
        }
    }
}
