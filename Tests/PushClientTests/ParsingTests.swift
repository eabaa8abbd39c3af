@testable import PushClient
import Testing

@Suite("Strict base64")
struct StrictBase64Tests {
    @Test("canonical padded base64 decodes", arguments: [("", [UInt8]()), ("QQ==", [65]), ("QUI=", [65, 66]), ("QUJD", [65, 66, 67]),
                                                          ("+/8=", [0xFB, 0xFF])])
    func decodes(text: String, bytes: [UInt8]) {
        #expect(StrictBase64.decode(text) == bytes)
    }

    @Test("anything else is refused, including what Foundation on Linux accepts",
          arguments: ["QUI", "QUJD=", "QU=I", "QUI==", "QR==", "QUJ=", "QUJD\n", "QU JD", "QUJD QUJD", "QU-_", "=QUJ", "===="])
    func refuses(text: String) {
        #expect(StrictBase64.decode(text) == nil)
    }
}

@Suite("Payload values")
struct PayloadValueTests {
    @Test("booleans stay booleans and numbers stay numbers")
    func booleansAndNumbers() {
        let value = PayloadValue(json: Array(#"{"t":true,"f":false,"one":1,"zero":0,"half":0.5,"big":12345678901234,"s":"x","n":null,"a":[true,1]}"#.utf8))
        #expect(value == .object([
            "t": .bool(true), "f": .bool(false), "one": .number(1), "zero": .number(0), "half": .number(0.5),
            "big": .number(12_345_678_901_234), "s": .string("x"), "n": .null, "a": .array([.bool(true), .number(1)]),
        ]))
    }

    @Test("malformed and absurdly deep JSON is nil, not a crash")
    func malformed() {
        // (Foundation accepts a trailing comma, `[1,]`; harmless, so not listed.)
        for text in ["", "{", "{\"a\":", "nul", "[1] x", String(repeating: "[", count: 100_000), "{\"a\":\"\\ud800\"}"] {
            #expect(PayloadValue(json: Array(text.utf8)) == nil, "\(text.prefix(20))")
        }
    }
}
