import Foundation

/// RFC 3339 timestamps as the schemas use them (with or without fractional seconds).
public enum RFC3339 {
    public static func date(from text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// UTC with milliseconds, e.g. `2026-11-29T21:00:00.123Z`.
    public static func string(from date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
