import Foundation
import PushModel
@testable import PushWorker
import Testing

/// The JSON Schema producers validate against (`Schemas/job.v1.schema.json`, checked with
/// `jsonschema` from PyPI through `Schemas/tests/schema-verdicts.sh`) and the worker's own
/// intake must give every job the same verdict: every example and a set of boundary cases.
///
/// Two rules are outside the comparison on purpose, each tested on its own: the sealed size
/// (no schema can compute it; `SealedSizeTests`) and where retry state may come from (a
/// property of the path, not of the document; `IntakeHardeningTests`), so the intake is asked
/// as for the workers' retries queue. Live Activity jobs are left to their own tests.
@Suite("Schema and intake agree")
struct SchemaAgreementTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var base: [String: Any] {
        [
        "version": 1, "job_id": "agree-1",
        "app": ["ios_bundle_id": "com.example.app", "fcm_project_id": "example-app"],
        "recipients": ["recipient_ids": ["user-1"]],
        "content": ["title": "t", "message": "m", "data": ["k": "v"]],
        "fallback": ["title": "New message", "message": "Open the app"],
        ]
    }

    /// `base` with `value` at `path` (dot-separated; NSNull() for JSON null; nil removes).
    static func with(_ path: String, _ value: Any?) -> [String: Any] {
        func set(_ object: [String: Any], _ keys: ArraySlice<Substring>) -> [String: Any] {
            var object = object
            let key = String(keys[keys.startIndex])
            if keys.count == 1 {
                object[key] = value
            } else {
                object[key] = set(object[key] as? [String: Any] ?? [:], keys.dropFirst())
            }
            return object
        }
        return set(base, ArraySlice(path.split(separator: ".")))
    }

    static func text(_ count: Int, _ character: String = "a") -> String { String(repeating: character, count: count) }

    static var boundaryCases: [(String, [String: Any])] {
        var cases: [(String, [String: Any])] = [("base", base)]
        func add(_ path: String, _ values: [Any?]) {
            for (index, value) in values.enumerated() { cases.append(("\(path)#\(index)", with(path, value))) }
        }
        add("version", [2, "1", 1.0])
        add("job_id", [text(128), text(129), "a b", "", 5])
        add("app.ios_bundle_id", ["com example", "-x", text(255), text(256), "", NSNull()])
        add("app.fcm_project_id", ["proj_1-x", "proj x", text(256)])
        add("app.experience_id", ["@a/b", "ab", "@a/b/c", "@a /b", text(300)])
        add("app.scope_key", ["", text(255), text(256), "@a/b"])
        add("app", [[String: Any](), ["experience_id": "@a/b"]])
        add("recipients", [[String: Any](), ["recipient_ids": ["a"], "device_ids": [1]]])
        add("recipients.recipient_ids", [[String](), [""], [text(1024)], [text(1025)], [text(1024, "é")], (0..<10_000).map { "r\($0)" },
                                        (0...10_000).map { "r\($0)" }, [5], "user-1"])
        cases.append(("device_ids", ["version": 1, "job_id": "d", "app": ["ios_bundle_id": "a.b"], "recipients": ["device_ids": [1]],
                                     "fallback": ["title": "t", "message": "m"]]))
        for (index, ids) in [[0], [9_007_199_254_740_991], [9_007_199_254_740_992], [1.5], ["1"], [Int]()].enumerated() as EnumeratedSequence<[[Any]]> {
            cases.append(("device_ids#\(index)", ["version": 1, "job_id": "d", "app": ["ios_bundle_id": "a.b"], "recipients": ["device_ids": ids],
                                                  "fallback": ["title": "t", "message": "m"]]))
        }
        add("content", [NSNull(), "text", [String: Any]()])
        add("content.title", [5, text(1000, "é")])
        add("content.data", [[1, 2], "x"])
        add("content.sender", [["id": "s", "displayName": "S"], ["id": "s"], ["id": "", "displayName": "S"], ["id": "s", "displayName": ""],
                               ["id": "s", "displayName": "S", "avatarUrl": "http://x.example/a.png"],
                               ["id": "s", "displayName": "S", "avatarUrl": "https://x.example/a.png"],
                               ["id": text(255), "displayName": text(255, "é")], ["id": text(256), "displayName": "S"],
                               ["id": "s", "displayName": "S", "avatarUrl": "https://x.example/" + text(2030)],
                               ["id": "s", "displayName": "S", "avatarUrl": "https://x.example/" + text(2031)]])
        add("fallback", [NSNull(), ["title": "t"], ["message": "m"]])
        add("fallback.title", ["", text(256), text(257), text(256, "é"), text(257, "é"), NSNull()])
        add("fallback.message", ["", text(1024), text(1025), text(1024, "€")])
        add("presentation.badge", [0, -1, 2_147_483_647, 2_147_483_648, 1.5, "3", NSNull()])
        for field in ["thread_id", "category", "sound", "android_channel_id"] {
            add("presentation.\(field)", ["", text(256), text(257), text(256, "é"), 1])
        }
        add("presentation", ["x", [String: Any]()])
        add("delivery.ttl_seconds", [-1, 0, 2_419_200, 2_419_201, 1.5])
        add("delivery.expires_at", [-1, 0, 1_900_000_000, 253_402_300_799, 253_402_300_800, Int64.max])
        add("delivery", [["ttl_seconds": 60, "expires_at": 1_900_000_000], [String: Any]()])
        add("delivery.collapse_id", [text(64), text(65), "a b", "", "é"])
        add("delivery.priority", ["high", "normal", "urgent", NSNull()])
        add("push_type", ["alert", "voip", NSNull()])
        let retry: [String: Any] = ["attempt": 2, "first_attempt_at": "2026-01-01T00:00:00Z", "device_ids": [1, 2]]
        add("retry", [retry, ["attempt": 2, "first_attempt_at": "2026-01-01T00:00:00Z"]])
        add("retry", [retry.merging(["attempt": 0]) { $1 }, retry.merging(["device_ids": [Int]()]) { $1 },
                      retry.merging(["first_attempt_at": "yesterday"]) { $1 }, retry.merging(["first_attempt_at": "2026-01-01T00:00:00.123+02:00"]) { $1 },
                      retry.merging(["device_ids": Array(1...10_000)]) { $1 }, retry.merging(["device_ids": Array(1...10_001)]) { $1 }])
        add("x_producer_field", [["anything": [1, NSNull()]]])
        return cases
    }

    static func examples() throws -> [(String, [UInt8])] {
        var documents: [(String, [UInt8])] = []
        for directory in ["Schemas/examples", "Schemas/examples/invalid"] {
            let url = root.appendingPathComponent(directory)
            for name in try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
            where name.hasPrefix("job.") && name.hasSuffix(".json") {
                let data = try Data(contentsOf: url.appendingPathComponent(name))
                // One line each: re-serialised compactly.
                let object = try JSONSerialization.jsonObject(with: data)
                documents.append(("\(directory)/\(name)", [UInt8](try JSONSerialization.data(withJSONObject: object))))
            }
        }
        return documents
    }

    /// The schema's verdict for each document, one line each.
    static func schemaVerdicts(_ documents: [[UInt8]]) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [root.appendingPathComponent("Schemas/tests/schema-verdicts.sh").path]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("schema-agreement-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in"), output = directory.appendingPathComponent("out")
        try Data(documents.map { $0 + [0x0A] }.joined()).write(to: input)
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process.standardInput = try FileHandle(forReadingFrom: input)
        process.standardOutput = try FileHandle(forWritingTo: output)
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "schema-verdicts.sh failed")
        return String(decoding: try Data(contentsOf: output), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test("every job example and boundary case gets the same verdict from the JSON Schema and from the worker's intake")
    func sameVerdicts() throws {
        var documents = try Self.examples()
        for (name, object) in Self.boundaryCases {
            documents.append((name, [UInt8](try JSONSerialization.data(withJSONObject: object))))
        }
        #expect(documents.count > 150)
        let verdicts = try Self.schemaVerdicts(documents.map(\.1))
        try #require(verdicts.count == documents.count, "one verdict per document: \(verdicts.count) for \(documents.count)")
        var disagreements: [String] = []
        for ((name, body), schema) in zip(documents, verdicts) {
            let schemaValid = schema == "valid"
            let intake = JobIntake().accept(body, publishedAt: nil, now: Fixtures.now, source: .retries)
            let intakeValid: Bool
            let reason: String
            switch intake {
            case .accepted: intakeValid = true; reason = "accepted"
            case .deadLetter(let why): intakeValid = false; reason = why.description
            }
            if schemaValid != intakeValid {
                disagreements.append("\(name): schema \(schema.prefix(160)) / intake \(reason.prefix(160))")
            }
        }
        let report = "\(disagreements.count) disagreements:\n" + disagreements.joined(separator: "\n")
        #expect(disagreements.isEmpty, "\(report)")
    }
}
