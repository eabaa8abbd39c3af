import Foundation
import PushCrypto
import PushDelivery
import PushModel
import PushQueue
import PushStore
@testable import PushWorker
import Testing

@Suite("Job report: outcomes to tally entries")
struct JobReportTests {
    let planner = FollowUpPlanner(retryPolicy: Fixtures.policy(maximumAttempts: 2))
    static let reporting = #""report":{"completed_event":true}"#

    func result(_ id: Int64, _ outcome: DeviceOutcome, platform: Platform = .ios) -> DeviceResult {
        DeviceResult(device: Fixtures.device(id, platform: platform), outcome: outcome)
    }

    @Test("no report without report.completed_event")
    func optIn() throws {
        let accepted = try Fixtures.accepted()
        #expect(JobReport(DeliveryReport([result(1, .sent(.delivered(id: nil)))]), followUps: [], for: accepted) == nil)
    }

    @Test("each outcome maps to its final state; a retry is pending; a broadcast's stand-in is left out")
    func outcomes() throws {
        let accepted = try Fixtures.accepted(Fixtures.jobJSON(Self.reporting))
        let results = [
            result(1, .sent(.delivered(id: nil))), result(2, .sent(.invalidToken(reason: "Unregistered", invalidSince: nil)), platform: .android),
            result(3, .sent(.rejected(reason: "BadTopic", status: 400))), result(4, .sent(.configurationError(reason: "x", status: 403))),
            result(5, .sealingFailed("openssl")), result(6, .keyInvalid(.tooSmall(bits: 1024))), result(7, .sent(.retryLater(reason: "503", retryAfter: nil))),
            result(0, .sent(.delivered(id: nil))),
        ]
        let report = try #require(JobReport(
            DeliveryReport(results, keepingDeliveredIDs: true), followUps: planner.plan(results, for: accepted, now: Fixtures.now), for: accepted))
        #expect(report.jobID == "job-1" && report.chunks == 1 && report.chunk == 0)
        #expect(report.entries.map(\.deviceID) == [1, 2, 3, 4, 5, 6, 7])
        #expect(report.entries.map(\.outcome) == [.delivered, .invalid, .rejected, .rejected, .rejected, .invalid, nil])
        #expect(report.entries[1].platform == .android)
        #expect(report.gone.isEmpty)
    }

    @Test("the last attempt's transient failures are retries exhausted; devices gone since the first attempt are named")
    func exhaustedAndGone() throws {
        let retry = #"{"attempt":2,"first_attempt_at":"2026-11-30T10:00:00Z","device_ids":[7,8,9]}"#
        let accepted = try Fixtures.accepted(Fixtures.jobJSON(Self.reporting, retry: retry))
        let results = [result(7, .sent(.retryLater(reason: "503", retryAfter: nil))), result(8, .sent(.delivered(id: nil)))]
        let followUps = planner.plan(results, for: accepted, now: Fixtures.now)
        let report = try #require(JobReport(DeliveryReport(results, keepingDeliveredIDs: true), followUps: followUps, for: accepted))
        #expect(report.entries.map(\.outcome) == [.retriesExhausted, .delivered])
        #expect(report.gone == [9])
    }

    @Test("a retry that came past the job's expiry: its devices are given up unsent, dead-lettered by id and counted as retries exhausted")
    func expiredRetry() throws {
        let retry = #"{"attempt":2,"first_attempt_at":"2026-11-30T10:00:00Z","device_ids":[7,8,9]}"#
        let accepted = try Fixtures.accepted(Fixtures.jobJSON(Self.reporting, retry: retry))
        let results = [result(7, .expired), result(8, .expired, platform: .android)]
        let followUps = planner.plan(results, for: accepted, now: Fixtures.now, expired: true)
        let state = NotificationJob.RetryState(attempt: 2, firstAttemptAt: accepted.firstAttemptAt, deviceIDs: [7, 8])
        #expect(followUps == [.deadLetter(.retriesExhausted(.expiredBeforeAttempt), retry: state)])
        #expect(DeadLetterReason.retriesExhausted(.expiredBeforeAttempt).description.contains("expired before this attempt"))
        let report = try #require(JobReport(DeliveryReport(results, keepingDeliveredIDs: true), followUps: followUps, for: accepted))
        #expect(report.entries.map(\.outcome) == [.retriesExhausted, .retriesExhausted])
        #expect(report.entries.map(\.platform) == [.ios, .android])
        #expect(report.gone == [9])
        // Without `expired` the retry policy decides (here: out of attempts): the flag gives the reason.
        #expect(planner.plan(results, for: accepted, now: Fixtures.now) == [.deadLetter(.retriesExhausted(.attemptsExhausted(2)), retry: state)])
    }

    @Test("a first attempt that came past the job's expiry: nothing to dead-letter (the job's own expiry), its devices counted as retries exhausted")
    func expiredFirstAttempt() throws {
        let accepted = try Fixtures.accepted(Fixtures.jobJSON(Self.reporting))
        let results = [result(1, .expired), result(2, .expired, platform: .android)]
        #expect(planner.plan(results, for: accepted, now: Fixtures.now, expired: true).isEmpty)
        let report = try #require(JobReport(DeliveryReport(results, keepingDeliveredIDs: true), followUps: [], for: accepted))
        #expect(report.entries.map(\.outcome) == [.retriesExhausted, .retriesExhausted])
        #expect(report.gone.isEmpty)
    }

    @Test("a chunk reports under its original job, as part index of count")
    func chunk() throws {
        let document = try JobDocument(json: Data(Fixtures.jobJSON(Self.reporting)))
        let chunkJSON = try #require(document.chunks(chunkSize: 1).first).json
        let accepted = try Fixtures.accepted(chunkJSON)
        let report = try #require(JobReport(DeliveryReport([result(1, .sent(.delivered(id: nil)))], keepingDeliveredIDs: true), followUps: [], for: accepted))
        #expect(report.jobID == "job-1" && report.chunks == 1 && report.chunk == 1)
    }

    @Test("job.completed publishes on the events exchange, not mandatory, with the job id as message id")
    func publishRequest() throws {
        let event = JobCompletedEvent(
            jobID: "job-1", occurredAt: Fixtures.now, chunks: 2, counts: [.ios: [.delivered: 3]], failedDeviceIDs: [],
            failedDeviceIDsTruncated: false)
        let topology = Topology(prefix: "p")
        let request = FollowUp.jobCompleted(event).publishRequest(
            topology: topology, message: JobMessage(body: [], headers: [:], messageID: "job-1#2", queue: "p.jobs.bulk"), document: nil)
        #expect(request.exchange == "p.events" && request.routingKey == "job.completed" && !request.mandatory)
        #expect(request.message.messageID == "job-1")
    }
}
