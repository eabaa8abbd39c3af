/// A first-in first-out queue whose `removeFirst` costs O(1) amortised.
///
/// `Array.removeFirst` moves every element behind the first on each call: a semaphore with
/// a thousand delivery tasks waiting for two encryption permits moved the whole waiting list
/// on every release. Here a taken slot is emptied at once (so what it held is freed) and
/// skipped by an index; the emptied slots are dropped together once they are half the array.
///
/// Inlinable, so a module using it gets a copy specialised for its element type: the HTTP/2
/// loop's queue of waiting requests (another module) ran the generic code, looking up the
/// element type's metadata and witnesses at run time, for every request it took.
@frozen
public struct FIFOQueue<Element> {
    @usableFromInline var slots: [Element?] = []
    @usableFromInline var head = 0

    @inlinable
    public init() {}

    @inlinable
    public var isEmpty: Bool { head == slots.count }
    @inlinable
    public var count: Int { slots.count - head }
    @inlinable
    public var first: Element? { head < slots.count ? slots[head] : nil }

    @inlinable
    public mutating func append(_ element: Element) { slots.append(element) }

    /// Removes and returns the oldest element; nil when the queue is empty.
    @inlinable
    @discardableResult
    public mutating func removeFirst() -> Element? {
        guard head < slots.count else { return nil }
        let element = slots[head].take()
        head += 1
        compact()
        return element
    }

    /// Removes and returns the oldest element that matches; O(n), for rare removals such as
    /// a cancelled waiter giving up its place.
    @inlinable
    public mutating func remove(firstWhere matches: (Element) -> Bool) -> Element? {
        guard let index = slots[head...].firstIndex(where: { $0.map(matches) ?? false }) else { return nil }
        let element = slots.remove(at: index)
        compact()
        return element
    }

    @inlinable
    mutating func compact() {
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
