import Foundation
@testable import PushDelivery
import Testing

@Suite("Response header lines split on bytes")
struct HeaderLineTests {
    /// The Foundation split the byte version replaced: the same result is required.
    static func reference(_ line: String) -> (String, String)? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func parse(_ line: String) -> (String, String)? {
        let bytes = Array(line.utf8)
        return bytes.withUnsafeBufferPointer { HeaderLine.parse($0) }.map { ($0.name, $0.value) }
    }

    @Test("names lower-cased, values trimmed, as Foundation did", arguments: [
        "apns-id: 1B2C3D4E-0000-1111-2222-333344445555\r\n", "Retry-After: 120\r\n", "content-type:application/json\r\n",
        "X-Empty:\r\n", "X-Spaces: \t  spaced value \t \r\n", "no colon here\r\n", "\r\n", ":\r\n",
        "Name-With-Colons: a:b:c\r\n", "x-vt: \u{0B}v\u{0C}\r\n", "x-unicode: \u{A0}value\u{2003}\r\n", "Ünïcode-Name: wert\r\n",
        "x-nel: value\u{85}\r\n",
    ])
    func matchesReference(line: String) {
        let got = Self.parse(line)
        let want = Self.reference(line)
        #expect(got?.0 == want?.0)
        #expect(got?.1 == want?.1)
        #expect((got == nil) == (want == nil))
    }
}
