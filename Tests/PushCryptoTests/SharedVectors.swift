import Foundation
import Testing

/// The cross-implementation vectors in `../shared/vectors/e2e-envelope-v1.json`, made by an
/// independent implementation (Python `cryptography`). Located beside the repository, as CI
/// lays it out; `PUSHD_SHARED_DIR` overrides the location.
struct SharedVectors: Sendable {
    struct Key: Sendable {
        let name: String
        let bits: Int
        let privateKeyPEM: String
        /// format name → key text, e.g. "pkcs1_der_base64".
        let publicKey: [String: String]
    }

    struct RejectedKey: Sendable {
        let name: String
        let why: String
        let formats: [String: String]
    }

    struct Vector: Sendable {
        let name: String
        let key: String
        /// The envelope object, re-serialised as JSON.
        let envelope: Data
        let envelopeAsJSONString: String?
        let plaintext: String?
        let mustFailBecause: String?
    }

    let keys: [String: Key]
    let rejectedKeys: [RejectedKey]
    let positives: [Vector]
    let negatives: [Vector]

    static var directory: URL {
        if let override = ProcessInfo.processInfo.environment["PUSHD_SHARED_DIR"] {
            return URL(fileURLWithPath: override)
        }
        // Tests/PushCryptoTests/SharedVectors.swift → repository → ../shared
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared")
    }

    static func load() throws -> SharedVectors {
        let url = directory.appendingPathComponent("vectors/e2e-envelope-v1.json")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var keys: [String: Key] = [:]
        for entry in try #require(root["keys"] as? [[String: Any]]) {
            let key = Key(
                name: try #require(entry["name"] as? String),
                bits: try #require(entry["bits"] as? Int),
                privateKeyPEM: try #require(entry["private_key_pkcs8_pem"] as? String),
                publicKey: try #require(entry["public_key"] as? [String: String]))
            keys[key.name] = key
        }
        let rejected = try #require(root["rejected_public_keys"] as? [[String: Any]]).map { entry in
            RejectedKey(
                name: entry["name"] as? String ?? "?", why: entry["why"] as? String ?? "",
                formats: entry.compactMapValues { $0 as? String }.filter { $0.key != "name" && $0.key != "why" })
        }
        func vectors(_ field: String) throws -> [Vector] {
            try #require(root[field] as? [[String: Any]]).map { entry in
                Vector(
                    name: try #require(entry["name"] as? String),
                    key: try #require(entry["key"] as? String),
                    envelope: try JSONSerialization.data(withJSONObject: try #require(entry["envelope"] as? [String: Any])),
                    envelopeAsJSONString: entry["envelope_as_json_string"] as? String,
                    plaintext: entry["plaintext_utf8"] as? String,
                    mustFailBecause: entry["must_fail_because"] as? String)
            }
        }
        return SharedVectors(
            keys: keys, rejectedKeys: rejected, positives: try vectors("vectors"), negatives: try vectors("negative_vectors"))
    }
}
