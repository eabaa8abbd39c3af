/// The exchanges a loop holds until they finish, linked through the exchanges themselves.
///
/// Adding and removing one is a few pointer writes; the dictionary by id it replaces hashed
/// the id twice per request and kept storage of its own. A cancelled request reaches the
/// loop as its exchange (`LoopInbox.cancelled`), so nothing is looked up by id; cancelling a
/// group and enforcing deadlines walk every request, as they did. Loop thread only, like the
/// exchanges' own loop state.
struct OutstandingExchanges {
    private(set) var count = 0
    private var head: Exchange?

    var isEmpty: Bool { head == nil }

    /// Adds `exchange` (once: an exchange already listed stays where it is).
    mutating func insert(_ exchange: Exchange) {
        guard !exchange.isOutstanding else { return }
        exchange.isOutstanding = true
        exchange.previousOutstanding = nil
        exchange.nextOutstanding = head
        head?.previousOutstanding = exchange
        head = exchange
        count += 1
    }

    /// Takes `exchange` out, if it is listed.
    mutating func remove(_ exchange: Exchange) {
        guard exchange.isOutstanding else { return }
        exchange.isOutstanding = false
        let previous = exchange.previousOutstanding
        let next = exchange.nextOutstanding
        if let previous { previous.nextOutstanding = next } else { head = next }
        next?.previousOutstanding = previous
        exchange.previousOutstanding = nil
        exchange.nextOutstanding = nil
        count -= 1
    }

    /// Every listed exchange, newest first: a copy, so the caller may finish them as it goes.
    var all: [Exchange] {
        var exchanges: [Exchange] = []
        exchanges.reserveCapacity(count)
        var cursor = head
        while let exchange = cursor {
            exchanges.append(exchange)
            cursor = exchange.nextOutstanding
        }
        return exchanges
    }

    /// Unlinks every exchange one at a time: dropping the head of a long list at once would
    /// release it recursively, one stack frame per exchange.
    mutating func removeAll() {
        while let exchange = head { remove(exchange) }
    }
}
