import Foundation
import PushCrypto
import Testing

@Suite("Shared cross-implementation vectors")
struct VectorTests {
    let vectors: SharedVectors

    init() throws {
        vectors = try SharedVectors.load()
    }

    @Test("the vector file has what these tests rely on")
    func vectorFileIsComplete() {
        #expect(vectors.positives.count >= 8)
        #expect(vectors.negatives.count >= 10)
        #expect(vectors.rejectedKeys.count >= 3)
        #expect(vectors.keys.count >= 3)
    }

    @Test("every positive vector opens to its exact plaintext, as an object and as a JSON string")
    func positivesDecrypt() throws {
        for vector in vectors.positives {
            let key = try DevicePrivateKey(pem: try #require(vectors.keys[vector.key]).privateKeyPEM)
            let expected = Array(try #require(vector.plaintext).utf8)
            let asObject = vector.envelope
            #expect(try key.open(json: asObject) == expected, "\(vector.name) as object")
            let asString = try #require(vector.envelopeAsJSONString, "\(vector.name) has no JSON-string form")
            let wrapped = try JSONSerialization.data(withJSONObject: asString, options: [.fragmentsAllowed])
            #expect(try key.open(json: wrapped) == expected, "\(vector.name) as JSON string")
        }
    }

    /// The error each negative vector must produce, by the reason the vector file gives.
    static let expectedFailures: [String: EnvelopeOpenError] = [
        "tampered-cipher_text": .authenticationFailed,
        "tampered-tag": .authenticationFailed,
        "tampered-nonce": .authenticationFailed,
        "tampered-encrypted_key": .wrongKey,
        "wrong-device-key": .wrongKey,
        "aes-128-key": .invalidContentKey(length: 16),
    ]

    @Test("every negative vector fails with the right kind of error")
    func negativesFail() throws {
        for vector in vectors.negatives {
            let key = try DevicePrivateKey(pem: try #require(vectors.keys[vector.key]).privateKeyPEM)
            let json = vector.envelope
            let error = #expect(throws: EnvelopeOpenError.self, "\(vector.name)") { try key.open(json: json) }
            if let expected = Self.expectedFailures[vector.name] {
                #expect(error == expected, "\(vector.name): \(String(describing: error))")
            } else {
                // Shape problems: missing field, bad base64, wrong nonce/tag length.
                guard case .malformedEnvelope = error else {
                    Issue.record("\(vector.name) should be a malformed envelope, got \(String(describing: error))")
                    continue
                }
            }
        }
    }

    @Test("every rejected public key is refused, in every format given")
    func rejectedKeysRefused() throws {
        for rejected in vectors.rejectedKeys {
            #expect(!rejected.formats.isEmpty)
            for (format, text) in rejected.formats {
                let error = #expect(throws: PublicKeyError.self, "\(rejected.name) as \(format)") {
                    try DevicePublicKey(parsing: text)
                }
                switch (rejected.name, error) {
                case ("rsa-1024", .tooSmall(bits: 1024)?), ("ec-p256", .notRSA?), ("garbage", .unparseable?): break
                default: Issue.record("\(rejected.name) as \(format): unexpected \(String(describing: error))")
                }
            }
        }
    }

    @Test("every accepted key format parses to the same key, and seals envelopes its private key opens")
    func keyFormatsRoundTrip() throws {
        for key in vectors.keys.values {
            let privateKey = try DevicePrivateKey(pem: key.privateKeyPEM)
            #expect(key.publicKey.count == 4)
            var seen: Set<String> = []
            for (format, text) in key.publicKey {
                let publicKey = try DevicePublicKey(parsing: text)
                #expect(publicKey.bits == key.bits, "\(key.name) \(format)")
                seen.insert(publicKey.subjectPublicKeyInfoBase64)
                let plaintext = Array("{\"format\":\"\(format)\"}".utf8)
                let json = try EnvelopeSealer.sealJSON(plaintext, for: publicKey)
                #expect(try privateKey.open(json: Data(json.utf8)) == plaintext, "\(key.name) \(format)")
            }
            #expect(seen.count == 1, "all formats of \(key.name) are one key")
            #expect(seen.first == key.publicKey["spki_der_base64"])
        }
    }

    @Test("exports match the formats the devices produce")
    func exportsMatchDeviceFormats() throws {
        for key in vectors.keys.values {
            let parsed = try DevicePublicKey(parsing: try #require(key.publicKey["spki_pem"]))
            #expect(parsed.pkcs1Base64 == key.publicKey["pkcs1_der_base64"])
            #expect(parsed.subjectPublicKeyInfoBase64 == key.publicKey["spki_der_base64"])
            #expect(parsed.pem.trimmingCharacters(in: .whitespacesAndNewlines)
                == key.publicKey["spki_pem"]?.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(parsed.pkcs1PEM.trimmingCharacters(in: .whitespacesAndNewlines)
                == key.publicKey["pkcs1_pem"]?.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}
