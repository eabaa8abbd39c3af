import Foundation
import PushRuntime

/// The message name of an FCM success body, `{"name": "projects/…/messages/…"}`.
///
/// Every delivered Android push is read here. The body FCM sends has exactly that shape,
/// so it is matched byte by byte: a JSON object whose only member is `name` with a string
/// value free of escapes. Anything else (escapes, other members, other types, invalid
/// UTF-8) goes to `JSONDecoder`, so the answer is always the decoder's: the fast reading
/// only ever returns what the decoder would. A `JSONDecoder` pass cost ~3% of a worker's
/// CPU while a backlog drained.
enum FCMAcceptedName {
    private struct Accepted: Decodable {
        let name: String?
    }

    /// Shared: decoding does not change a decoder, and one is not made for every push.
    private static let decoder = JSONDecoder()

    static func read(_ body: [UInt8]) -> String? {
        if let simple = simpleShape(body) { return simple }
        return (try? decoder.decode(Accepted.self, from: Data(body)))?.name
    }

    /// The name when `body` is `{ "name" : "<text without \ or control characters>" }`
    /// (any JSON whitespace around the tokens) and the text is valid UTF-8; nil otherwise.
    static func simpleShape(_ body: [UInt8]) -> String? {
        body.withUnsafeBufferPointer { bytes -> String? in
            var index = 0
            func skipWhitespace() {
                while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                    index += 1
                }
            }
            func expect(_ literal: StaticString) -> Bool {
                let count = literal.utf8CodeUnitCount
                guard bytes.count - index >= count else { return false }
                for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
                index += count
                return true
            }
            skipWhitespace()
            guard expect("{") else { return nil }
            skipWhitespace()
            guard expect("\"name\"") else { return nil }
            skipWhitespace()
            guard expect(":") else { return nil }
            skipWhitespace()
            guard expect("\"") else { return nil }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                // An escape or a raw control character: left to the decoder.
                guard bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 else { return nil }
                index += 1
            }
            guard index < bytes.count else { return nil }
            let end = index
            index += 1
            skipWhitespace()
            guard expect("}") else { return nil }
            skipWhitespace()
            guard index == bytes.count else { return nil }
            return String(validUTF8: UnsafeBufferPointer(rebasing: bytes[start..<end]))
        }
    }
}
