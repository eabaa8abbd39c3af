import Foundation
@testable import PushCleanup
import PushModel
import PushStore
import Testing

/// `token.invalid` events are untrusted input to the cleanup consumer: the bound it prunes by
/// must be a real time no later than the failure and than now, or a device registered since
/// would be deleted.
@Suite("Cleanup: what a token.invalid event may prune")
struct CleanupEventTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let token = "c0de" + String(repeating: "a", count: 60)

    static func event(_ fields: String) -> [UInt8] {
        Array(#"{"version":1,"event":"token.invalid","platform":"ios","app_id":"com.example.app","environment":"production","token":"\#(token)","reason":"BadDeviceToken"\#(fields)}"#.utf8)
    }

    static func bound(_ fields: String) throws -> Date? {
        try CleanupService.pruneRequest(from: event(fields), now: now).get().invalidSince
    }

    @Test("no occurred_at, or one before 1970, is refused: the prune would have no bound")
    func missingOccurredAt() {
        for fields in ["", #","occurred_at":"1969-12-31T23:59:59Z""#, #","occurred_at":"1970-01-01T00:00:00Z""#] {
            guard case .failure(let unusable) = CleanupService.pruneRequest(from: Self.event(fields), now: Self.now) else {
                Issue.record("accepted \(fields)")
                continue
            }
            #expect(unusable.description.contains("occurred_at"))
        }
    }

    @Test("the bound: invalid_since, else occurred_at; never later than occurred_at, never later than now")
    func bounded() throws {
        #expect(try Self.bound(#","occurred_at":"2027-01-15T07:00:00Z""#) == RFC3339.date(from: "2027-01-15T07:00:00Z"))
        #expect(try Self.bound(#","occurred_at":"2027-01-15T07:00:00Z","invalid_since":"2027-01-14T00:00:00Z""#)
            == RFC3339.date(from: "2027-01-14T00:00:00Z"))
        #expect(try Self.bound(#","occurred_at":"2027-01-15T07:00:00Z","invalid_since":"2099-01-01T00:00:00Z""#)
            == RFC3339.date(from: "2027-01-15T07:00:00Z"))
        #expect(try Self.bound(#","occurred_at":"2099-01-01T00:00:00Z""#) == Self.now)
        #expect(try Self.bound(#","occurred_at":"2099-01-01T00:00:00Z","invalid_since":"2098-01-01T00:00:00Z""#) == Self.now)
    }

    @Test("why an event is refused names the field, never the token")
    func reasons() {
        let cases = [
            (#","occurred_at":"2027-01-15T07:00:00Z","invalid_since":"yesterday""#, "invalid_since"),
            (#","occurred_at":12"#, "occurred_at"),
        ]
        for (fields, field) in cases {
            guard case .failure(let unusable) = CleanupService.pruneRequest(from: Self.event(fields), now: Self.now) else {
                Issue.record("accepted \(fields)")
                continue
            }
            #expect(unusable.description.contains(field), "\(unusable)")
            #expect(!unusable.description.contains(Self.token))
        }
        let noEnvironment = Array(String(decoding: Self.event(#","occurred_at":"2027-01-15T07:00:00Z""#), as: UTF8.self)
            .replacingOccurrences(of: #""environment":"production","#, with: "").utf8)
        #expect(CleanupService.pruneRequest(from: noEnvironment, now: Self.now) == .failure(.init(description: "an iOS event without environment")))
        #expect(CleanupService.pruneRequest(from: Array("[]".utf8), now: Self.now) == .failure(.init(description: "unreadable: not a token.invalid event")))
    }

    @Test("a prune cut short by the cleanup stopping is not the events' fault; a refused argument is")
    func interruptions() {
        #expect(CleanupService.isInterruption(.cancelled) && CleanupService.isInterruption(.poolClosed))
        #expect(!CleanupService.isInterruption(.invalidParameter(index: 1, reason: "NUL")))
    }
}
