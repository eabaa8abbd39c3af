import Foundation
import PushCrypto
import Testing

/// Only keys a device could have generated are trusted: RSA of 2048, 3072 or 4096 bits with
/// exponent 65537 that pass OpenSSL's public-key check. The forged keys here are built as
/// PKCS#1 DER by hand, with a real modulus and another exponent, or a broken modulus.
@Suite("Public key strength")
struct KeyStrengthTests {
    /// DER of `RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }`.
    static func pkcs1(modulus: [UInt8], exponent: [UInt8]) -> String {
        func integer(_ magnitude: [UInt8]) -> [UInt8] {
            var bytes = Array(magnitude.drop { $0 == 0 })
            if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
            return [0x02] + length(bytes.count) + bytes
        }
        func length(_ count: Int) -> [UInt8] {
            if count < 0x80 { return [UInt8(count)] }
            if count < 0x100 { return [0x81, UInt8(count)] }
            return [0x82, UInt8(count >> 8), UInt8(count & 0xff)]
        }
        let body = integer(modulus) + integer(exponent)
        return Data([0x30] + length(body.count) + body).base64EncodedString()
    }

    /// The modulus of a real key, read from its PKCS#1 DER (SEQUENCE, then the INTEGER).
    static func modulus(of key: DevicePublicKey) throws -> [UInt8] {
        let der = try #require(Data(base64Encoded: key.pkcs1Base64)).map { $0 }
        #expect(Array(der[0...1]) == [0x30, 0x82] && Array(der[4...5]) == [0x02, 0x82])
        let length = Int(der[6]) << 8 | Int(der[7])
        return Array(der[8..<(8 + length)])
    }

    @Test("a real key rebuilt with exponent 65537 is accepted: the forgery helper is sound")
    func rebuiltKeyAccepted() throws {
        let modulus = try Self.modulus(of: try TestKeys.devicePublic)
        let rebuilt = try DevicePublicKey(parsing: Self.pkcs1(modulus: modulus, exponent: [0x01, 0x00, 0x01]))
        #expect(rebuilt.pkcs1Base64 == (try TestKeys.devicePublic).pkcs1Base64)
    }

    static let weakExponentCases: [([UInt8], UInt64)] = [
        ([0x01], 1), ([0x03], 3), ([0x01, 0x00, 0x00], 65_536), ([0x01, 0x00, 0x03], 65_539),
        // 64 bits with the top one set: negative as a signed size_t, which must not trap.
        ([0x80, 0, 0, 0, 0, 0, 0, 0x01], 0x8000_0000_0000_0001), ([UInt8](repeating: 0xFF, count: 8), .max),
    ]

    @Test("exponents other than 65537 are refused", arguments: weakExponentCases)
    func weakExponents(exponent: [UInt8], value: UInt64) throws {
        let modulus = try Self.modulus(of: try TestKeys.devicePublic)
        let error = #expect(throws: PublicKeyError.self) {
            try DevicePublicKey(parsing: Self.pkcs1(modulus: modulus, exponent: exponent))
        }
        #expect(error == .unsupportedExponent(value))
        #expect(error?.description.contains("only 65537") == true)
    }

    @Test("an exponent wider than 64 bits is refused")
    func hugeExponent() throws {
        let modulus = try Self.modulus(of: try TestKeys.devicePublic)
        let error = #expect(throws: PublicKeyError.self) {
            try DevicePublicKey(parsing: Self.pkcs1(modulus: modulus, exponent: [0x01] + Array(repeating: 0, count: 8) + [0x01]))
        }
        #expect(error == .unsupportedExponent(nil))
    }

    @Test("a modulus of a size no device generates is refused", arguments: [2049, 2560, 8192])
    func unsupportedSizes(bits: Int) throws {
        var modulus = [UInt8](repeating: 0xa5, count: (bits + 7) / 8)
        modulus[0] = bits % 8 == 0 ? 0xc3 : 0x01  // top bit set: exactly `bits` bits
        modulus[modulus.count - 1] |= 1
        let error = #expect(throws: PublicKeyError.self) {
            try DevicePublicKey(parsing: Self.pkcs1(modulus: modulus, exponent: [0x01, 0x00, 0x01]))
        }
        #expect(error == .unsupportedSize(bits: bits))
    }

    @Test("an even or small-factor modulus of the right size fails OpenSSL's public-key check")
    func brokenModulus() throws {
        var even = try Self.modulus(of: try TestKeys.devicePublic)
        even[even.count - 1] &= 0xfe
        var multipleOfThree = [UInt8](repeating: 0xff, count: 256)  // 2^2048 - 1 = 3 · 5 · 17 · …
        multipleOfThree[255] = 0xff
        for modulus in [even, multipleOfThree] {
            let error = #expect(throws: PublicKeyError.self) {
                try DevicePublicKey(parsing: Self.pkcs1(modulus: modulus, exponent: [0x01, 0x00, 0x01]))
            }
            #expect(error == .failedPublicKeyCheck)
        }
    }

    @Test("3072 and 4096-bit device keys are accepted", arguments: [3072, 4096])
    func largerKeys(bits: Int) throws {
        let key = try DevicePrivateKey.generate(bits: bits)
        #expect(try DevicePublicKey(parsing: key.publicKey.subjectPublicKeyInfoBase64).bits == bits)
    }

    @Test("a long PEM label is quoted in the error only as a short excerpt")
    func longLabelExcerpt() {
        let label = String(repeating: "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A", count: 20)
        let error = #expect(throws: PublicKeyError.self) {
            try DevicePublicKey(parsing: "-----BEGIN \(label)-----\nAAAA\n-----END \(label)-----")
        }
        let text = error?.description ?? ""
        #expect(!text.contains(label.prefix(64)))
        #expect(text.count < 200, "\(text.count) characters")
    }
}
