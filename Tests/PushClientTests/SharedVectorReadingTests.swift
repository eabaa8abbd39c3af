import Foundation
import PushClient
import Testing

/// The independent implementation's vectors (`../shared/vectors/e2e-envelope-v1.json`) read
/// as a phone reads a payload: `SealedEnvelope(value:)` on the value found in it, then the
/// device key. The server-side parser has its own run of them (`PushCryptoTests`); this one
/// checks that what the phones parse is the format itself, not only what this project writes.
@Suite("Shared vectors, phone side")
struct SharedVectorReadingTests {
    static var file: URL {
        let shared = ProcessInfo.processInfo.environment["PUSHD_SHARED_DIR"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared")
        return shared.appendingPathComponent("vectors/e2e-envelope-v1.json")
    }

    /// The vector file's keys by name, and its positive and negative vectors.
    static func load() throws -> (keys: [String: OpenSSLPrivateKey], positives: [[String: Any]], negatives: [[String: Any]]) {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        var keys: [String: OpenSSLPrivateKey] = [:]
        for entry in try #require(root["keys"] as? [[String: Any]]) {
            keys[try #require(entry["name"] as? String)] = try OpenSSLPrivateKey(pem: try #require(entry["private_key_pkcs8_pem"] as? String))
        }
        return (keys, try #require(root["vectors"] as? [[String: Any]]), try #require(root["negative_vectors"] as? [[String: Any]]))
    }

    /// Each vector's name, its device key, the plaintext it holds (positives) and its envelope
    /// as a payload carries it: the object, and the JSON string holding it.
    static func cases(_ vectors: [[String: Any]], keys: [String: OpenSSLPrivateKey]) throws
        -> [(name: String, key: OpenSSLPrivateKey, plaintext: [UInt8]?, values: [PayloadValue])]
    {
        try vectors.map { vector in
            let name = vector["name"] as? String ?? "?"
            let keyName = vector["key"] as? String ?? ""
            let key = try #require(keys[keyName], "\(name): key \(keyName)")
            let object = try JSONSerialization.data(withJSONObject: try #require(vector["envelope"] as? [String: Any]))
            var values = [try #require(PayloadValue(json: object))]
            if let text = vector["envelope_as_json_string"] as? String {
                values.append(try #require(PayloadValue(json: try JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed]))))
            }
            return (name, key, (vector["plaintext_utf8"] as? String).map { Array($0.utf8) }, values)
        }
    }

    @Test("every positive vector opens to its plaintext, from the object and from the JSON string")
    func positives() throws {
        let (keys, positives, _) = try Self.load()
        #expect(positives.count >= 8)
        for vector in try Self.cases(positives, keys: keys) {
            let plaintext = try #require(vector.plaintext, "\(vector.name) has no plaintext")
            for value in vector.values {
                #expect(try vector.key.open(SealedEnvelope(value: value)) == plaintext, "\(vector.name)")
            }
        }
    }

    @Test("every negative vector is refused, by the envelope's parse or by its opening, never opened")
    func negatives() throws {
        let (keys, _, negatives) = try Self.load()
        #expect(negatives.count >= 10)
        for vector in try Self.cases(negatives, keys: keys) {
            for value in vector.values {
                let opened: [UInt8]? = try? vector.key.open(SealedEnvelope(value: value))
                #expect(opened == nil, "\(vector.name) was opened")
            }
        }
    }
}
