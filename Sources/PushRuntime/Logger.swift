import Foundation
import Synchronization

/// Structured logs: one JSON object per line on standard error.
///
/// Rules every caller follows (and the tests grep for): no plaintext of any notification,
/// no private data, no whole push token (use `Redact.token`), no secrets.
public struct Logger: Sendable {
    public enum Level: String, Sendable, Comparable {
        case debug, info, warning, error

        private var rank: Int {
            switch self {
            case .debug: 0
            case .info: 1
            case .warning: 2
            case .error: 3
            }
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    /// A field value: strings, numbers and booleans only, so nothing structured (a payload,
    /// a job) can be logged by accident.
    public enum Value: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case string(String)
        case int(Int)
        case double(Double)
        case bool(Bool)

        public init(stringLiteral value: String) { self = .string(value) }
        public init(integerLiteral value: Int) { self = .int(value) }
    }

    public let label: String
    public var metadata: [String: Value]
    public var minimumLevel: Level

    /// `PUSHD_LOG_LEVEL` (debug, info, warning, error) sets the default minimum level.
    public init(label: String, metadata: [String: Value] = [:], minimumLevel: Level? = nil) {
        self.label = label
        self.metadata = metadata
        self.minimumLevel = minimumLevel
            ?? ProcessInfo.processInfo.environment["PUSHD_LOG_LEVEL"].flatMap(Level.init(rawValue:)) ?? .info
    }

    public func with(_ extra: [String: Value]) -> Logger {
        var copy = self
        copy.metadata.merge(extra) { $1 }
        return copy
    }

    public func debug(_ message: String, _ fields: [String: Value] = [:]) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [String: Value] = [:]) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: Value] = [:]) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: Value] = [:]) { log(.error, message, fields) }

    public func log(_ level: Level, _ message: String, _ fields: [String: Value]) {
        guard level >= minimumLevel else { return }
        var line = "{\"ts\":\(JSONText.quote(LogTimestamp.now())),\"level\":\"\(level.rawValue)\",\"logger\":\(JSONText.quote(label)),\"msg\":\(JSONText.quote(message))"
        for (key, value) in metadata.merging(fields, uniquingKeysWith: { $1 }).sorted(by: { $0.key < $1.key }) {
            line += ",\(JSONText.quote(key)):\(value.json)"
        }
        line += "}\n"
        LogSink.shared.write(line)
    }
}

extension Logger.Value {
    var json: String {
        switch self {
        case .string(let text): return JSONText.quote(text)
        case .int(let number): return String(number)
        case .double(let number): return number.isFinite ? String(number) : "null"
        case .bool(let flag): return flag ? "true" : "false"
        }
    }
}

/// Serialises whole lines onto standard error so lines from many tasks never interleave.
final class LogSink: Sendable {
    static let shared = LogSink()
    private let lock = Mutex(())

    func write(_ line: String) {
        lock.withLock { _ in
            var line = line
            line.withUTF8 { bytes in
                guard let base = bytes.baseAddress else { return }
                var offset = 0
                while offset < bytes.count {
                    let written = Foundation.write(2, base + offset, bytes.count - offset)
                    if written <= 0 { return }
                    offset += written
                }
            }
        }
    }
}
