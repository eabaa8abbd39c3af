@testable import PushQueue
import Testing

@Suite("Header tables to and from rabbitmq-c")
struct HeaderTableTests {
    @Test("every header value survives encoding into a C field table and decoding back")
    func roundTrip() {
        let headers: [String: HeaderValue] = [
            "x-pushd-reason": "apns: BadDeviceToken",
            "x-pushd-attempt": 7,
            "negative": .int(-42),
            "big": .int(Int64.max),
            "flag": true,
            "ratio": .double(0.25),
            "raw": .bytes([0, 255, 10]),
            "when": .timestamp(1_700_000_000),
            "x-death": .array([.table(["count": 1, "reason": "expired", "queue": "pushd.retry.5s"])]),
            "empty-array": .array([]),
            "empty-table": .table([:]),
            "nothing": .void,
            "unicode ключ": "значение ✓",
        ]
        let arena = CArena()
        let table = arena.table(headers)
        #expect(table.num_entries == Int32(headers.count))
        #expect(HeaderValue.decode(table) == headers)
    }

    @Test("an empty table encodes to no entries")
    func empty() {
        let table = CArena().table([:])
        #expect(table.num_entries == 0)
        #expect(HeaderValue.decode(table).isEmpty)
    }
}
