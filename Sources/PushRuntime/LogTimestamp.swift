import Foundation

/// A log line's time, `2026-12-04T05:28:26.953Z` (RFC 3339 in UTC, milliseconds), written
/// from the calendar fields `gmtime_r` gives.
///
/// Foundation's `Date.ISO8601FormatStyle` made the same text, but its first use in a
/// process loaded ICU's calendar and time-zone data (about 1 ms of a worker's start-up, and
/// page faults in the ICU data file), and every line after paid for a calendar
/// computation; a worker logs a line per job.
public enum LogTimestamp {
    /// The current time.
    public static func now() -> String {
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        return format(secondsSinceEpoch: Int(clock.tv_sec), nanoseconds: Int(clock.tv_nsec))
    }

    /// `secondsSinceEpoch` and the nanoseconds past it, truncated to milliseconds as the
    /// format style did. RFC 3339 has four-digit years: a year past 9999 keeps its last four.
    /// `nanoseconds` must be in 0..<1,000,000,000; a time `gmtime_r` cannot convert (a year
    /// beyond `Int32`) reads `invalid-time`, a log line is not worth a crash.
    public static func format(secondsSinceEpoch: Int, nanoseconds: Int) -> String {
        precondition((0..<1_000_000_000).contains(nanoseconds), "nanoseconds out of range")
        var seconds = time_t(secondsSinceEpoch)
        var fields = tm()
        guard gmtime_r(&seconds, &fields) != nil else { return "invalid-time" }
        var text = Text()
        text.digits(Int(fields.tm_year) + 1900, count: 4)
        text.byte(UInt8(ascii: "-"))
        text.digits(Int(fields.tm_mon) + 1, count: 2)
        text.byte(UInt8(ascii: "-"))
        text.digits(Int(fields.tm_mday), count: 2)
        text.byte(UInt8(ascii: "T"))
        text.digits(Int(fields.tm_hour), count: 2)
        text.byte(UInt8(ascii: ":"))
        text.digits(Int(fields.tm_min), count: 2)
        text.byte(UInt8(ascii: ":"))
        text.digits(Int(fields.tm_sec), count: 2)
        text.byte(UInt8(ascii: "."))
        text.digits(nanoseconds / 1_000_000, count: 3)
        text.byte(UInt8(ascii: "Z"))
        return text.string
    }

    /// The 24 bytes of one timestamp, in a fixed buffer (no array, no allocation but the
    /// String's own).
    private struct Text {
        var bytes: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var count = 0

        mutating func byte(_ byte: UInt8) {
            withUnsafeMutableBytes(of: &bytes) { $0[count] = byte }
            count += 1
        }

        /// `value` (not negative) in decimal, zero-padded to `count` digits (the lowest ones
        /// if longer).
        mutating func digits(_ value: Int, count digitCount: Int) {
            let value = max(value, 0)  // a year before 1 BC, unreachable from a clock
            var divisor = 1
            for _ in 1..<digitCount { divisor *= 10 }
            while divisor > 0 {
                byte(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }

        var string: String {
            withUnsafeBytes(of: bytes) { String(decoding: $0.prefix(count), as: UTF8.self) }
        }
    }
}
