import Foundation
@testable import PushDelivery
import Testing

/// The byte-level reading of FCM success bodies is held to `JSONDecoder`'s: whatever it
/// reads, the decoder reads the same; what it does not read goes to the decoder.
@Suite("FCM success bodies read as JSONDecoder reads them")
struct FCMAcceptedNameTests {
    private struct Accepted: Decodable {
        let name: String?
    }

    private static func decoderReading(_ body: [UInt8]) -> String? {
        (try? JSONDecoder().decode(Accepted.self, from: Data(body)))?.name
    }

    /// Success bodies as FCM and the emulator write them.
    static let bodies = [
        #"{"name":"projects/p/messages/1"}"#,
        "{\n  \"name\": \"projects/demo-project/messages/0:1700000000000000%abcdef\"\n}\n",
        #"{ "name" : "projects/p/messages/é✓" }"#,
    ]

    @Test("FCM's own shapes take the fast reading, with the decoder's answer")
    func commonShapes() {
        for body in Self.bodies.map({ Array($0.utf8) }) {
            #expect(FCMAcceptedName.simpleShape(body) != nil, "\(String(decoding: body, as: UTF8.self))")
            #expect(FCMAcceptedName.simpleShape(body) == Self.decoderReading(body))
            #expect(FCMAcceptedName.read(body) == Self.decoderReading(body))
        }
    }

    @Test("shapes outside the fast reading get the decoder's answer")
    func otherShapes() {
        let cases = [
            #"{"name":"a\"b"}"#, #"{"name":"\u0041"}"#, #"{"n\u0061me":"x"}"#, #"{"name":null}"#, #"{"name":1}"#,
            #"{"name":"x","other":2}"#, #"{"other":2,"name":"x"}"#, #"{"name":"x","name":"y"}"#, "\u{FEFF}{\"name\":\"x\"}",
            "{\"name\":\"x\"", "", "null", "[]", "{}", #"{"name":"x"}}"#, #"{"name":"x"},"#,
        ]
        for text in cases {
            let body = Array(text.utf8)
            #expect(FCMAcceptedName.read(body) == Self.decoderReading(body), "\(text)")
            if let fast = FCMAcceptedName.simpleShape(body) { #expect(fast == Self.decoderReading(body), "\(text)") }
        }
        let invalidUTF8: [UInt8] = Array(#"{"name":"ab"#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(FCMAcceptedName.simpleShape(invalidUTF8) == nil)
        #expect(FCMAcceptedName.read(invalidUTF8) == Self.decoderReading(invalidUTF8))
    }

    /// Every body one byte away from FCM's shapes (each byte replaced by, or preceded by,
    /// each of a set of bytes that matter to JSON, or removed): wherever the fast reading
    /// answers, it answers as the decoder does.
    @Test("every one-byte edit of FCM's shapes: the fast reading never disagrees with the decoder")
    func oneByteEdits() {
        let interesting: [UInt8] = [0x00, 0x09, 0x0A, 0x1F, 0x20, 0x22, 0x2C, 0x3A, 0x5C, 0x5B, 0x5D, 0x7B, 0x7D, 0x61, 0x30, 0x7F, 0x80, 0xC3, 0xE2, 0xFF]
        var variants = 0, fast = 0
        for base in Self.bodies.map({ Array($0.utf8) }) {
            for position in 0...base.count {
                var edits: [[UInt8]] = []
                if position < base.count {
                    var removed = base
                    removed.remove(at: position)
                    edits.append(removed)
                    for byte in interesting {
                        var replaced = base
                        replaced[position] = byte
                        edits.append(replaced)
                    }
                }
                for byte in interesting {
                    var inserted = base
                    inserted.insert(byte, at: position)
                    edits.append(inserted)
                }
                for edit in edits {
                    variants += 1
                    let reading = Self.decoderReading(edit)
                    if let answer = FCMAcceptedName.simpleShape(edit) {
                        fast += 1
                        #expect(answer == reading, "\(edit)")
                    }
                    #expect(FCMAcceptedName.read(edit) == reading, "\(edit)")
                }
            }
        }
        // Both readings were exercised: many edits still have the shape, many do not.
        #expect(fast > 100 && fast < variants - 100, "\(fast) of \(variants) edits read fast")
    }
}
