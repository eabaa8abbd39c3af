import Foundation
import PushCrypto
import Testing

/// Android's SubjectPublicKeyInfo is read by a short cut to the PKCS#1 key inside (OpenSSL's
/// general decoder costs about 230 µs a key): the same key comes out, and what the general
/// decoder refused is still refused.
@Suite("SubjectPublicKeyInfo")
struct SubjectPublicKeyInfoTests {
    @Test("an Android key is the same key as its iOS form, at every accepted size", arguments: [2048, 3072])
    func sameKey(bits: Int) throws {
        let key = bits == 2048 ? try TestKeys.devicePublic : try DevicePrivateKey.generate(bits: bits).publicKey
        let android = try DevicePublicKey(parsing: key.subjectPublicKeyInfoBase64)
        #expect(android.pkcs1Base64 == key.pkcs1Base64)
        #expect(android.bits == bits)
    }

    @Test("a byte too many or too few, or another algorithm, is refused")
    func malformed() throws {
        let der = try #require(Data(base64Encoded: try TestKeys.devicePublic.subjectPublicKeyInfoBase64)).map { $0 }
        for broken in [der + [0x00], Array(der.dropLast()), Array(der.prefix(40))] {
            #expect(throws: PublicKeyError.self) { try DevicePublicKey(parsing: Data(broken).base64EncodedString()) }
        }
        // The algorithm changed to id-ecPublicKey's OID length and bytes: not RSA any more.
        var other = der
        let rsa: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]
        let index = try #require((0..<(other.count - rsa.count)).first { Array(other[$0..<($0 + rsa.count)]) == rsa })
        other[index + rsa.count - 1] = 0x02  // 1.2.840.113549.1.1.2, md2WithRSA: no key algorithm
        #expect(throws: PublicKeyError.self) { try DevicePublicKey(parsing: Data(other).base64EncodedString()) }
    }
}
