import Foundation
import PushStore
import Testing

@Suite("SQLQuery: interpolated values are parameters, never SQL")
struct SQLQueryTests {
    @Test("every interpolated value becomes the next $n parameter; only literals are SQL text")
    func valuesBecomeParameters() {
        let hostile = "'; DROP TABLE devices; --"
        let limit = 5
        let query: SQLQuery = "SELECT id FROM devices WHERE recipient_id = \(hostile) AND app_id = \("x") LIMIT \(limit)"
        #expect(query.sql == "SELECT id FROM devices WHERE recipient_id = $1 AND app_id = $2 LIMIT $3")
        #expect(!query.sql.contains("DROP"))
        #expect(query.bindings.count == 3)
        #expect(query.bindings[0] == SQLBinding(type: .text, bytes: Array(hostile.utf8)))
        #expect(query.bindings[2] == SQLBinding(type: .int8, bytes: [0, 0, 0, 0, 0, 0, 0, 5]))
        #expect(!query.description.contains("DROP"), "descriptions never show values")
    }

    @Test("nil is a typed NULL parameter")
    func nullParameter() {
        let missing: String? = nil
        let present: Int32? = 7
        let query: SQLQuery = "SELECT \(missing), \(present)"
        #expect(query.sql == "SELECT $1, $2")
        #expect(query.bindings == [SQLBinding(type: .text, bytes: nil), SQLBinding(type: .int4, bytes: [0, 0, 0, 7])])
    }

    @Test("a spliced fragment keeps its parameters, renumbered after the ones before it")
    func fragments() {
        let condition: SQLQuery = "app_id = \("a") AND platform = \("ios")"
        let query: SQLQuery = "SELECT \(Int64(1)) FROM devices WHERE \(fragment: condition) AND id > \(Int64(2))"
        #expect(query.sql == "SELECT $1 FROM devices WHERE app_id = $2 AND platform = $3 AND id > $4")
        #expect(query.bindings.map(\.bytes) == [
            [0, 0, 0, 0, 0, 0, 0, 1], Array("a".utf8), Array("ios".utf8), [0, 0, 0, 0, 0, 0, 0, 2],
        ])
        let joined: SQLQuery = "SELECT \(true)" + " WHERE x = \(false)"
        #expect(joined.sql == "SELECT $1 WHERE x = $2")
    }

    @Test("identifiers are double-quoted with quotes doubled, and refused when PostgreSQL would alter them")
    func identifiers() throws {
        let name = try SQLIdentifier("we\"ird; DROP DATABASE x")
        let query: SQLQuery = "CREATE DATABASE \(identifier: name)"
        #expect(query.sql == "CREATE DATABASE \"we\"\"ird; DROP DATABASE x\"")
        #expect(query.bindings.isEmpty)
        #expect(throws: SQLEncodingError.self) { try SQLIdentifier("") }
        #expect(throws: SQLEncodingError.self) { try SQLIdentifier("a\u{0}b") }
        #expect(throws: SQLEncodingError.self) { try SQLIdentifier(String(repeating: "x", count: 64)) }
        #expect(try SQLIdentifier(String(repeating: "x", count: 63)).name.count == 63)
    }

    @Test("arrays use PostgreSQL's binary array format, NULL elements included")
    func arrays() {
        let query: SQLQuery = "SELECT \(["a", nil, "bc"] as [String?])"
        #expect(query.bindings.first?.type == .textArray)
        let expected: [UInt8] = [
            0, 0, 0, 1, /* dimensions */ 0, 0, 0, 1, /* has NULL */ 0, 0, 0, 25, /* text */
            0, 0, 0, 3, /* length */ 0, 0, 0, 1, /* lower bound */
            0, 0, 0, 1, 0x61, /* "a" */ 0xFF, 0xFF, 0xFF, 0xFF, /* NULL */ 0, 0, 0, 2, 0x62, 0x63, /* "bc" */
        ]
        #expect(query.bindings.first?.bytes == expected)
        let empty: SQLQuery = "SELECT \([Int64]())"
        #expect(empty.bindings.first == SQLBinding(type: .int8Array, bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20]))
    }

    @Test("timestamps are microseconds since 2000-01-01 UTC")
    func timestamps() {
        let epoch = Date(timeIntervalSince1970: 946_684_800)
        let query: SQLQuery = "SELECT \(epoch), \(epoch.addingTimeInterval(1.5)), \(epoch.addingTimeInterval(-0.000001))"
        #expect(query.bindings[0].bytes == [0, 0, 0, 0, 0, 0, 0, 0])
        #expect(query.bindings[1].bytes == [0, 0, 0, 0, 0, 0x16, 0xE3, 0x60])
        #expect(query.bindings[2].bytes == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    }
}
