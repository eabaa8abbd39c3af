import Foundation
@testable import PushCrypto
import Testing

/// Android's SubjectPublicKeyInfo is read by a short cut to the PKCS#1 key inside (OpenSSL's
/// general decoder costs about 230 µs a key): the same key comes out, only the canonical
/// shape takes the short cut, and what the general decoder refused is still refused.
@Suite("SubjectPublicKeyInfo")
struct SubjectPublicKeyInfoTests {
    static let rsaEncryption: [UInt8] = [0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00]

    /// DER length octets, shortest form unless `padded` (one leading zero octet more).
    static func length(_ count: Int, padded: Bool = false) -> [UInt8] {
        var octets: [UInt8] = []
        var rest = count
        while rest > 0 { octets.insert(UInt8(rest & 0xff), at: 0); rest >>= 8 }
        if padded { octets.insert(0, at: 0) }
        if count < 0x80, !padded { return [UInt8(count)] }
        return [0x80 | UInt8(octets.count)] + octets
    }

    /// A SubjectPublicKeyInfo around `pkcs1`, with each part of the shape adjustable.
    static func spki(
        _ pkcs1: [UInt8], algorithm: [UInt8] = rsaEncryption, unusedBits: UInt8 = 0, trailingInBitString: [UInt8] = [],
        paddedOuterLength: Bool = false
    ) -> [UInt8] {
        let bits = [unusedBits] + pkcs1 + trailingInBitString
        let body = algorithm + [0x03] + length(bits.count) + bits
        return [0x30] + length(body.count, padded: paddedOuterLength) + body
    }

    static func pkcs1(_ key: DevicePublicKey) throws -> [UInt8] {
        try #require(Data(base64Encoded: key.pkcs1Base64)).map { $0 }
    }

    @Test("an Android key is the same key as its iOS form, at every accepted size", arguments: [2048, 3072, 4096])
    func sameKey(bits: Int) throws {
        let key = bits == 2048 ? try TestKeys.devicePublic : try DevicePrivateKey.generate(bits: bits).publicKey
        let der = try #require(Data(base64Encoded: key.subjectPublicKeyInfoBase64)).map { $0 }
        #expect(der == Self.spki(try Self.pkcs1(key)), "the helper builds what OpenSSL exports")
        #expect(SubjectPublicKeyInfo.rsaPublicKey(in: der).map(Array.init) == (try Self.pkcs1(key)), "the short cut is taken")
        let android = try DevicePublicKey(parsing: key.subjectPublicKeyInfoBase64)
        #expect(android.pkcs1Base64 == key.pkcs1Base64)
        #expect(android.bits == bits)
    }

    @Test("any other shape is left to OpenSSL's decoder")
    func otherShapesDeclined() throws {
        let inner = try Self.pkcs1(try TestKeys.devicePublic)
        let withoutNull: [UInt8] = [0x30, 0x0b] + Array(Self.rsaEncryption[2..<13])
        let shapes: [(String, [UInt8])] = [
            ("a padded outer length", Self.spki(inner, paddedOuterLength: true)),
            ("unused bits", Self.spki(inner, unusedBits: 1)),
            ("no NULL parameters", Self.spki(inner, algorithm: withoutNull)),
            ("a byte after the key inside the BIT STRING", Self.spki(inner, trailingInBitString: [0x00])),
            ("a byte after the SubjectPublicKeyInfo", Self.spki(inner) + [0x00]),
            ("truncated", Array(Self.spki(inner).dropLast())),
        ]
        for (label, der) in shapes {
            let inside = SubjectPublicKeyInfo.rsaPublicKey(in: der)
            // The BIT STRING case has the canonical shape: the short cut finds it, and
            // d2i_PublicKey's full-consumption check refuses it (see `malformed`).
            if label.hasPrefix("a byte after the key") {
                #expect(inside.map(Array.init) == inner + [0x00], "\(label)")
            } else {
                #expect(inside == nil, "\(label)")
            }
        }
    }

    /// A byte after the key inside the BIT STRING was accepted before the short cut
    /// (`d2i_PUBKEY` ignores it); it is refused now, as trailing bytes are everywhere else.
    @Test("a byte too many or too few, another algorithm, or a broken BIT STRING is refused")
    func malformed() throws {
        let inner = try Self.pkcs1(try TestKeys.devicePublic)
        // 1.2.840.113549.1.1.2 (md2WithRSAEncryption): not a key algorithm.
        var otherAlgorithm = Self.rsaEncryption
        otherAlgorithm[12] = 0x02
        let refused: [[UInt8]] = [
            Self.spki(inner) + [0x00], Array(Self.spki(inner).dropLast()), Array(Self.spki(inner).prefix(40)),
            Self.spki(inner, trailingInBitString: [0x00]), Self.spki(inner, unusedBits: 1), Self.spki(inner, algorithm: otherAlgorithm),
        ]
        for (index, der) in refused.enumerated() {
            #expect(throws: PublicKeyError.self, "case \(index)") { try DevicePublicKey(parsing: Data(der).base64EncodedString()) }
            #expect(throws: PublicKeyError.self, "case \(index), PEM") {
                try DevicePublicKey(parsing: "-----BEGIN PUBLIC KEY-----\n\(Data(der).base64EncodedString())\n-----END PUBLIC KEY-----")
            }
        }
    }

    /// Outside the short cut's shape `d2i_PUBKEY` ignores bytes after the key inside the BIT
    /// STRING: there an RSA key must be the one DER encoding of itself, so those bytes (and
    /// encodings DER does not allow) are refused too, never stored beside a valid key.
    @Test("trailing bytes inside the BIT STRING of any other shape, or a non-DER encoding, are refused")
    func otherShapesStrict() throws {
        let inner = try Self.pkcs1(try TestKeys.devicePublic)
        let withoutNull: [UInt8] = [0x30, 0x0b] + Array(Self.rsaEncryption[2..<13])
        let refused: [(String, [UInt8])] = [
            ("no NULL, garbage in the BIT STRING", Self.spki(inner, algorithm: withoutNull, trailingInBitString: Array("GARBAGE!".utf8))),
            ("a padded outer length, a byte in the BIT STRING", Self.spki(inner, trailingInBitString: [0x00], paddedOuterLength: true)),
            ("a padded outer length", Self.spki(inner, paddedOuterLength: true)),
        ]
        for (label, der) in refused {
            #expect(throws: PublicKeyError.self, "\(label)") { try DevicePublicKey(parsing: Data(der).base64EncodedString()) }
        }
        // The shape OpenSSL itself exports still parses, through either path.
        #expect(try DevicePublicKey(parsing: Data(Self.spki(inner)).base64EncodedString()).bits == 2048)
    }

    @Test("a PEM key followed by anything but whitespace is refused")
    func pemTrailingText() throws {
        let body = try TestKeys.devicePublic.subjectPublicKeyInfoBase64
        let pem = "-----BEGIN PUBLIC KEY-----\n\(body)\n-----END PUBLIC KEY-----"
        #expect(try DevicePublicKey(parsing: pem + "\n\n").bits == 2048)
        for trailing in ["\nanything", "\n-----BEGIN PUBLIC KEY-----\n\(body)\n-----END PUBLIC KEY-----\n"] {
            #expect(throws: PublicKeyError.self, "\(trailing.prefix(12))") { try DevicePublicKey(parsing: pem + trailing) }
        }
    }
}
