import Foundation
import PushModel
import Testing

@Suite("Lanes, chunks and reports of a job")
struct JobVolumeTests {
    static func json(_ extra: String = "", recipients: Int = 3, idKind: String = "recipient_ids") -> Data {
        let ids = (1...recipients).map { idKind == "device_ids" ? "\($0)" : "\"user-\($0)\"" }.joined(separator: ",")
        return Data(#"""
        {"version":1,"job_id":"campaign-7","app":{"ios_bundle_id":"com.acme.app"},
         "recipients":{"\#(idKind)":[\#(ids)]},"fallback":{"title":"New","message":"Open the app"},
         "producer_field":{"kept":true}\#(extra)}
        """#.utf8)
    }

    @Test("the lane defaults to urgent; bulk is read; anything else is refused with its path")
    func lane() throws {
        #expect(try NotificationJob(json: Self.json()).delivery.lane == .urgent)
        #expect(try NotificationJob(json: Self.json(#","delivery":{"lane":"bulk"}"#)).delivery.lane == .bulk)
        #expect(throws: JobValidationError("delivery.lane", #"must be "urgent" or "bulk", got "slow""#)) {
            try NotificationJob(json: Self.json(#","delivery":{"lane":"slow"}"#))
        }
    }

    @Test("report.completed_event is opt-in and must be a boolean")
    func report() throws {
        #expect(try NotificationJob(json: Self.json()).report.completedEvent == false)
        #expect(try NotificationJob(json: Self.json(#","report":{"completed_event":true}"#)).report.completedEvent)
        #expect(throws: JobValidationError("report.completed_event", "must be true or false")) {
            try NotificationJob(json: Self.json(#","report":{"completed_event":"yes"}"#))
        }
    }

    @Test("only a producer's job over the chunk size is split: never a chunk, a retry or a small job")
    func needsSplitting() throws {
        let document = try JobDocument(json: Self.json(recipients: 25))
        #expect(document.needsSplitting(chunkSize: 10))
        #expect(!document.needsSplitting(chunkSize: 25))
        let chunk = try JobDocument(json: Data(document.chunks(chunkSize: 10)[0].json))
        #expect(!chunk.needsSplitting(chunkSize: 1))
        let retry = try JobDocument(json: Self.json(#","retry":{"attempt":2,"first_attempt_at":"2026-11-30T10:00:00Z","device_ids":[4]}"#, recipients: 25))
        #expect(!retry.needsSplitting(chunkSize: 10))
    }

    @Test("chunks: deterministic ids and bytes, consecutive recipients, bulk lane, the original's fields")
    func chunks() throws {
        let document = try JobDocument(json: Self.json(recipients: 25))
        let chunks = document.chunks(chunkSize: 10)
        #expect(chunks.map(\.jobID) == ["campaign-7#1", "campaign-7#2", "campaign-7#3"])
        #expect(chunks.map(\.json) == document.chunks(chunkSize: 10).map(\.json))
        var recipients: [String] = []
        for (number, chunk) in chunks.enumerated() {
            let parsed = try JobDocument(json: Data(chunk.json))
            #expect(parsed.job.jobID == chunk.jobID)
            #expect(parsed.job.chunk == .init(jobID: "campaign-7", index: number + 1, count: 3))
            #expect(parsed.job.delivery.lane == .bulk)
            #expect(parsed.job.delivery.collapseID == nil, "the collapse id comes from chunk.job_id")
            #expect(parsed.job.reportJobID == "campaign-7")
            #expect(parsed.fields["producer_field"] == .object(["kept": .bool(true)]))
            guard case .recipientIDs(let ids) = parsed.job.recipients else {
                Issue.record("chunk \(number) lost its recipient ids")
                continue
            }
            recipients += ids
        }
        #expect(recipients == (1...25).map { "user-\($0)" })
    }

    @Test("device-id jobs split too; a 128-character job id still gives valid chunk ids")
    func deviceIDsAndLongIDs() throws {
        let document = try JobDocument(json: Self.json(recipients: 5, idKind: "device_ids"))
        let chunks = document.chunks(chunkSize: 2)
        #expect(try chunks.map { try NotificationJob(json: Data($0.json)).recipients } == [.deviceIDs([1, 2]), .deviceIDs([3, 4]), .deviceIDs([5])])
        let longID = String(repeating: "j", count: NotificationJob.maximumJobIDLength)
        let long = try JobDocument(json: Data(String(decoding: Self.json(recipients: 3), as: UTF8.self)
            .replacingOccurrences(of: "campaign-7", with: longID).utf8))
        let longChunks = long.chunks(chunkSize: 1)
        #expect(try longChunks.map { try NotificationJob(json: Data($0.json)).jobID } == (1...3).map { "\(longID)#\($0)" })
    }

    @Test("a chunk block must be consistent")
    func chunkValidation() {
        #expect(throws: JobValidationError("chunk.index", "must be between 1 and chunk.count")) {
            try NotificationJob(json: Self.json(#","chunk":{"job_id":"campaign","index":4,"count":3}"#))
        }
    }
}
