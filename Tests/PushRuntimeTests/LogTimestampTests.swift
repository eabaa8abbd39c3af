import Foundation
import PushRuntime
import Testing

@Suite("Log timestamps")
struct LogTimestampTests {
    @Test("fixed instants, milliseconds truncated")
    func fixedInstants() {
        #expect(LogTimestamp.format(secondsSinceEpoch: 0, nanoseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(LogTimestamp.format(secondsSinceEpoch: 1_796_362_106, nanoseconds: 953_999_999) == "2026-12-04T05:28:26.953Z")
        // The last millisecond of a leap day.
        #expect(LogTimestamp.format(secondsSinceEpoch: 951_868_799, nanoseconds: 999_000_000) == "2000-02-29T23:59:59.999Z")
        #expect(LogTimestamp.format(secondsSinceEpoch: 253_402_300_799, nanoseconds: 1_000_000) == "9999-12-31T23:59:59.001Z")
    }

    @Test("milliseconds are truncated, not rounded, as Foundation's format style did: the last tenths of a millisecond of a year")
    func truncatedAsFoundation() {
        let style = Date.ISO8601FormatStyle().year().month().day().timeZone(separator: .omitted)
            .time(includingFractionalSeconds: true).timeSeparator(.colon).dateTimeSeparator(.standard)
        // 2025-12-31T23:59:59.9996Z: rounding would print the next year.
        let seconds = 1_767_225_599
        #expect(LogTimestamp.format(secondsSinceEpoch: seconds, nanoseconds: 999_600_000) == "2025-12-31T23:59:59.999Z")
        #expect(Date(timeIntervalSince1970: Double(seconds) + 0.9996).formatted(style) == "2025-12-31T23:59:59.999Z")
        #expect(LogTimestamp.format(secondsSinceEpoch: 1_796_362_106, nanoseconds: 123_999_999) == "2026-12-04T05:28:26.123Z")
        #expect(Date(timeIntervalSince1970: 1_796_362_106.1239).formatted(style) == "2026-12-04T05:28:26.123Z")
    }

    @Test("the same text Foundation's ISO 8601 format style (the previous formatter) gives, for instants over two centuries")
    func agreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        let style = Date.ISO8601FormatStyle().year().month().day().timeZone(separator: .omitted)
            .time(includingFractionalSeconds: true).timeSeparator(.colon).dateTimeSeparator(.standard)
        for _ in 0..<2_000 {
            let seconds = Int.random(in: -2_208_988_800...4_102_444_800, using: &generator)  // 1900...2100
            let milliseconds = Int.random(in: 0..<1000, using: &generator)
            let date = Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000 + 0.0004)
            #expect(LogTimestamp.format(secondsSinceEpoch: seconds, nanoseconds: milliseconds * 1_000_000) == date.formatted(style))
        }
    }

    @Test("now is the current time, in the format")
    func now() throws {
        let before = Date()
        let text = LogTimestamp.now()
        let after = Date()
        #expect(text.utf8.count == 24)
        let parsed = try #require(try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
        #expect(parsed >= before.addingTimeInterval(-0.001) && parsed <= after)
    }
}
