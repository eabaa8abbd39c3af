import Foundation
import PushModel
@testable import PushWorker
import Testing

@Suite("Job intake")
struct JobIntakeTests {
    @Test("a valid job is accepted once parsed; its first attempt is the producer's timestamp, else now")
    func accepted() throws {
        let stamped = try Fixtures.accepted(publishedAt: 1_700_000_000)
        #expect(stamped.job.jobID == "job-1")
        #expect(stamped.firstAttemptAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(stamped.attempt == 1)
        #expect(stamped.retryDeviceIDs == nil)
        #expect(try Fixtures.accepted().firstAttemptAt == Fixtures.now)
    }

    @Test("a retry job keeps its first-attempt time, attempt and devices")
    func retryState() throws {
        let job = try Fixtures.accepted(
            Fixtures.jobJSON(retry: #"{"attempt":3,"first_attempt_at":"2026-01-01T00:00:00Z","device_ids":[4,5]}"#),
            publishedAt: 1_900_000_000)
        #expect(job.attempt == 3)
        #expect(job.firstAttemptAt == RFC3339.date(from: "2026-01-01T00:00:00Z"))
        #expect(job.retryDeviceIDs == [4, 5])
    }

    @Test("expiry: expires_at, or first attempt plus ttl_seconds, or none")
    func expiry() throws {
        #expect(try Fixtures.accepted().expiresAt == nil)
        let ttl = try Fixtures.accepted(Fixtures.jobJSON(#""delivery":{"ttl_seconds":60}"#), publishedAt: 1_700_000_000)
        #expect(ttl.expiresAt == Date(timeIntervalSince1970: 1_700_000_060))
        let absolute = try Fixtures.accepted(Fixtures.jobJSON(#""delivery":{"expires_at":1800000100}"#))
        #expect(absolute.expiresAt == Date(timeIntervalSince1970: 1_800_000_100))
    }

    @Test("an oversize body is dead-lettered unread, with its size in the reason")
    func oversize() {
        let intake = JobIntake(maximumBytes: 10)
        let decision = intake.accept(Fixtures.jobJSON(), publishedAt: nil, now: Fixtures.now)
        guard case .deadLetter(let reason) = decision else { Issue.record("accepted: \(decision)"); return }
        #expect(reason.cause == "oversize")
        #expect(reason.description.hasPrefix("oversize job: \(Fixtures.jobJSON().count) bytes, the limit is 10"))
    }

    @Test("malformed bodies are dead-lettered with the validation error", arguments: [
        "", "not json", "[]", #"{"version":2}"#, #"{"version":1,"job_id":"has space"}"#,
    ])
    func malformed(body: String) {
        let decision = JobIntake().accept(Array(body.utf8), publishedAt: nil, now: Fixtures.now)
        guard case .deadLetter(let reason) = decision else { Issue.record("accepted: \(decision)"); return }
        #expect(reason.cause == "malformed")
        #expect(reason.description.hasPrefix("malformed job: "))
    }

    @Test("the retry rewrite replaces only retry: a producer's own fields survive")
    func rewrite() throws {
        let job = try Fixtures.accepted(Fixtures.jobJSON(#""x_producer":{"trace":"abc","n":12}"#))
        let state = NotificationJob.RetryState(attempt: 2, firstAttemptAt: Fixtures.now, deviceIDs: [9, 10])
        let body = job.document.json(retry: state)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let producer = try #require(object["x_producer"] as? [String: Any])
        #expect(producer["trace"] as? String == "abc")
        #expect(producer["n"] as? Int == 12)
        let reread = try NotificationJob(json: Data(body))
        #expect(reread.retry == state)
        #expect(reread.jobID == "job-1")
    }
}
