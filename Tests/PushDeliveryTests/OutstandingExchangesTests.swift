import Testing

@testable import PushDelivery

/// The loop's list of unanswered requests, threaded through the exchanges.
@Suite("Native engine: outstanding exchanges")
struct OutstandingExchangesTests {
    private func exchange(_ id: UInt64) throws -> Exchange {
        let request = HTTPRequest(method: .get, url: "https://127.0.0.1:8443/\(id)")
        return Exchange(id: id, request: request, target: try RequestTarget(url: request.url), now: .now)
    }

    @Test("removals from the head, the middle and the tail keep the rest, newest first")
    func insertAndRemove() throws {
        var list = OutstandingExchanges()
        let exchanges = try (1...5).map { try exchange($0) }
        for exchange in exchanges { list.insert(exchange) }
        #expect(list.all.map(\.id) == [5, 4, 3, 2, 1])
        list.remove(exchanges[4])  // the head
        list.remove(exchanges[2])  // the middle
        list.remove(exchanges[0])  // the tail
        #expect(list.all.map(\.id) == [4, 2])
        #expect(list.count == 2)
        #expect(list.all.first { $0.id == 4 } === exchanges[3])
        #expect(list.all.first { $0.id == 3 } == nil)
        // Listed once however often inserted; removing one not listed changes nothing.
        list.insert(exchanges[1])
        list.remove(exchanges[2])
        #expect(list.all.map(\.id) == [4, 2])
        list.remove(exchanges[3])
        list.remove(exchanges[1])
        #expect(list.isEmpty && list.count == 0 && list.all.isEmpty)
        #expect(exchanges.allSatisfy { !$0.isOutstanding && $0.nextOutstanding == nil && $0.previousOutstanding == nil })
    }

    @Test("a long list is emptied without recursion, and its exchanges are freed")
    func removeAll() throws {
        var list = OutstandingExchanges()
        weak var first: Exchange?
        do {
            let head = try exchange(0)
            first = head
            list.insert(head)
            for id in 1...100_000 { list.insert(try exchange(UInt64(id))) }
        }
        #expect(list.count == 100_001)
        list.removeAll()
        #expect(list.isEmpty && list.count == 0)
        #expect(first == nil)
    }
}
