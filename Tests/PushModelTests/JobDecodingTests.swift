import Foundation
import PushModel
import Testing

@Suite("Job decoding and validation")
struct JobDecodingTests {
    static let complete = #"""
    {"version":1,"job_id":"job-42","app":{"ios_bundle_id":"com.acme.app","fcm_project_id":"acme-prod",
     "experience_id":"@acme/app","scope_key":"@acme/app"},
     "recipients":{"recipient_ids":["user-1","user-2"]},
     "content":{"title":"Anna Svensson","message":"Can we move the interview?","data":{"url":"acme://x","n":3},
                "sender":{"id":"c-1","displayName":"Acme","avatarUrl":"https://example.com/a.png"}},
     "fallback":{"title":"New message","message":"Open the app to read it"},
     "presentation":{"thread_id":"t-1","category":"MSG","sound":"default","badge":2,"android_channel_id":"messages"},
     "delivery":{"priority":"normal","ttl_seconds":3600,"collapse_id":"c-42"},
     "producer_field":{"ignored":true}}
    """#

    @Test("a complete job decodes field by field; unknown fields are ignored")
    func complete() throws {
        let job = try NotificationJob(json: Data(Self.complete.utf8))
        #expect(job.jobID == "job-42")
        #expect(job.app == .init(iosBundleID: "com.acme.app", fcmProjectID: "acme-prod", experienceID: "@acme/app", scopeKey: "@acme/app"))
        #expect(job.recipients == .recipientIDs(["user-1", "user-2"]))
        #expect(job.content?.sender == .init(id: "c-1", displayName: "Acme", avatarURL: "https://example.com/a.png"))
        #expect(job.content?.data["n"] == .number(3))
        #expect(job.presentation.badge == 2)
        #expect(job.delivery == .init(priority: .normal, ttlSeconds: 3600, collapseID: "c-42"))
        #expect(job.retry == nil)
    }

    @Test("each broken field gives an error naming it", arguments: [
        (#"{"version":1}"#, "job_id"),
        ("[]", "must be a JSON object"),
        ("{not json", "not valid JSON"),
        (#"{"version":2,"job_id":"x"}"#, "version"),
        (#"{"version":1,"job_id":5}"#, "job_id: must be a string"),
        (#"{"version":1,"job_id":"x","app":{}}"#, "app: needs"),
        (#"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{}}"#, "recipients: needs exactly one"),
        (#"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{"recipient_ids":[]}}"#, "recipients.recipient_ids: must not be empty"),
        (#"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{"device_ids":["a"]}}"#, "recipients.device_ids[0]"),
        (#"{"version":1,"job_id":"x y","app":{"ios_bundle_id":"b"}}"#, "job_id: must be"),
        (#"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{"device_ids":[1]},"content":{"title":"t","message":"m"}}"#, "fallback: is required"),
        (#"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{"device_ids":[1]},"content":{"title":"t","message":"m"},"fallback":{"title":"f","message":"f"},"delivery":{"priority":"urgent"}}"#, "delivery.priority"),
        (#"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{"device_ids":[1]},"content":{"title":"t","message":"m"},"fallback":{"title":"f","message":"f"},"delivery":{"collapse_id":"0123456789012345678901234567890123456789012345678901234567890123456789"}}"#, "delivery.collapse_id"),
    ])
    func invalid(json: String, expected: String) {
        let error = #expect(throws: JobValidationError.self) { try NotificationJob(json: Data(json.utf8)) }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error") should mention \(expected)")
    }

    @Test("a recipient id is at most 1024 characters, counted as Unicode scalars, not bytes")
    func recipientIDLength() throws {
        func job(_ id: String) throws -> NotificationJob {
            let json = #"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{"recipient_ids":[""# + id
                + #""]},"content":{"title":"t","message":"m"},"fallback":{"title":"f","message":"f"}}"#
            return try NotificationJob(json: Data(json.utf8))
        }
        // 1024 two-byte scalars: 2048 bytes, within the limit.
        #expect(try job(String(repeating: "é", count: 1024)).recipients == .recipientIDs([String(repeating: "é", count: 1024)]))
        #expect(try job(String(repeating: "a", count: 1024)).recipients == .recipientIDs([String(repeating: "a", count: 1024)]))
        for tooLong in [String(repeating: "a", count: 1025), String(repeating: "é", count: 1025), String(repeating: "😀", count: 1025)] {
            let error = #expect(throws: JobValidationError.self) { try job(tooLong) }
            #expect(error?.description.contains("recipients.recipient_ids[0]") == true)
        }
    }

    @Test("more than the maximum recipients is refused")
    func tooManyRecipients() {
        let ids = (0...NotificationJob.maximumRecipients).map { "\"r\($0)\"" }.joined(separator: ",")
        let json = #"{"version":1,"job_id":"x","app":{"ios_bundle_id":"b"},"recipients":{"recipient_ids":["# + ids
            + #"]},"content":{"title":"t","message":"m"},"fallback":{"title":"f","message":"f"}}"#
        #expect(throws: JobValidationError.self) { try NotificationJob(json: Data(json.utf8)) }
    }
}

@Suite("Job schema examples")
struct SchemaExampleTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Schemas/examples")

    static func files(_ directory: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { ($0.lastPathComponent.hasPrefix("job.") || $0.lastPathComponent.hasPrefix("liveactivity.")) && $0.pathExtension == "json" }
    }

    @Test("every valid job example in Schemas/ decodes")
    func validExamples() throws {
        let files = try Self.files(Self.examples)
        #expect(files.count >= 4)
        for file in files {
            #expect(throws: Never.self, "\(file.lastPathComponent)") { try NotificationJob(json: Data(contentsOf: file)) }
        }
    }

    @Test("every invalid job example in Schemas/ is refused")
    func invalidExamples() throws {
        let files = try Self.files(Self.examples.appendingPathComponent("invalid"))
        #expect(files.count >= 5)
        for file in files {
            #expect(throws: JobValidationError.self, "\(file.lastPathComponent)") { try NotificationJob(json: Data(contentsOf: file)) }
        }
    }
}
