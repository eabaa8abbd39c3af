import Foundation

/// The keys every event starts with (`version`, `event`, who and when).
protocol EventCodingKeys: CodingKey {
    static var version: Self { get }
    static var event: Self { get }
    static var eventID: Self { get }
    static var occurredAt: Self { get }
    static var platform: Self { get }
    static var appID: Self { get }
}

/// What the event types share: their JSON bytes, and the checks their decoders make.
enum EventCoding {
    /// Writes the fields every event starts with, version 1.
    static func encodeCommon<Key: EventCodingKeys>(
        _ name: String, eventID: String, occurredAt: Date, platform: Platform, appID: String,
        into container: inout KeyedEncodingContainer<Key>
    ) throws {
        try container.encode(1, forKey: .version)
        try container.encode(name, forKey: .event)
        try container.encode(eventID, forKey: .eventID)
        try container.encode(RFC3339.string(from: occurredAt), forKey: .occurredAt)
        try container.encode(platform, forKey: .platform)
        try container.encode(appID, forKey: .appID)
    }

    static func expect<Key: CodingKey>(_ name: String, in container: KeyedDecodingContainer<Key>, key: Key) throws {
        let event = try container.decode(String.self, forKey: key)
        guard event == name else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "expected \(name), got \(event)")
        }
    }

    static func decodeNonEmpty<Key: CodingKey>(_ container: KeyedDecodingContainer<Key>, _ key: Key) throws -> String {
        let text = try container.decode(String.self, forKey: key)
        guard !text.isEmpty else { throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "empty") }
        return text
    }

    static func decodeDateIfPresent<Key: CodingKey>(_ container: KeyedDecodingContainer<Key>, _ key: Key) throws -> Date? {
        guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let date = RFC3339.date(from: text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not an RFC 3339 timestamp")
        }
        return date
    }
}

/// An event on the events exchange: its name is also its routing key.
public protocol PushEvent: Sendable, Codable {
    static var name: String { get }
    /// Unique (a UUID); also the AMQP `message_id`.
    var eventID: String { get }
}

extension PushEvent {
    /// Compact JSON with sorted keys: the bytes published on the events exchange.
    public var json: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The event types encode only strings, integers and optionals: encoding cannot fail.
        return (try? encoder.encode(self)).map(Array.init) ?? []
    }
}
