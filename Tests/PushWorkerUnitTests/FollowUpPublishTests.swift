import Foundation
import PushModel
import PushQueue
@testable import PushWorker
import Testing

/// Follow-ups become messages in one place, with the topology's names.
@Suite("Follow-ups encoded as publish requests")
struct FollowUpPublishTests {
    let topology = Topology(prefix: "t", retryTiers: Fixtures.tiers)
    let message = JobMessage(
        body: Fixtures.jobJSON(#""x_extra":true"#), headers: ["x-trace": .string("abc")], messageID: "job-1", queue: "t.jobs")

    @Test("a retry goes to the retry exchange under its tier, with the retry state and the producer's fields")
    func retry() throws {
        let accepted = try Fixtures.accepted(message.body)
        let state = NotificationJob.RetryState(attempt: 2, firstAttemptAt: Fixtures.now, deviceIDs: [3])
        let request = FollowUp.retry(state, tier: Fixtures.tiers[1]).publishRequest(
            topology: topology, message: message, document: accepted.document)
        #expect(request.exchange == "t.retry")
        #expect(request.routingKey == "30s")
        #expect(request.message.messageID == "job-1#2")
        let job = try NotificationJob(json: Data(request.message.body))
        #expect(job.retry == state)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(request.message.body)) as? [String: Any])
        #expect(object["x_extra"] as? Bool == true)
    }

    @Test("events go to the events exchange under their names; only token.invalid is mandatory")
    func events() {
        let device = Fixtures.device(5)
        let token = FollowUp.tokenInvalid(TokenInvalidEvent(device: device, reason: "Unregistered", invalidSince: nil, jobID: "job-1", occurredAt: Fixtures.now))
            .publishRequest(topology: topology, message: message, document: nil)
        #expect(token.exchange == "t.events")
        #expect(token.routingKey == Topology.tokenInvalidRoutingKey)
        #expect(token.mandatory)
        let key = FollowUp.keyInvalid(KeyInvalidEvent(device: device, reason: "bad", jobID: "job-1", occurredAt: Fixtures.now))
            .publishRequest(topology: topology, message: message, document: nil)
        #expect(key.routingKey == "key.invalid")
        #expect(!key.mandatory)
        #expect(key.message.messageID != token.message.messageID)
    }

    @Test("a dead letter keeps the job's headers and id and says why and where it came from")
    func deadLetter() throws {
        let malformed = FollowUp.deadLetter(.oversize(bytes: 9, limit: 1), retry: nil)
            .publishRequest(topology: topology, message: message, document: nil)
        #expect(malformed.exchange == "t.dead")
        #expect(malformed.message.body == message.body)
        #expect(malformed.message.messageID == "job-1")
        #expect(malformed.message.headers["x-trace"] == .string("abc"))
        #expect(malformed.message.headers["x-pushd-reason"] == .string("oversize job: 9 bytes, the limit is 1"))
        #expect(malformed.message.headers["x-pushd-original-queue"] == .string("t.jobs"))

        let state = NotificationJob.RetryState(attempt: 4, firstAttemptAt: Fixtures.now, deviceIDs: [7])
        let exhausted = FollowUp.deadLetter(.retriesExhausted(.attemptsExhausted(4)), retry: state)
            .publishRequest(topology: topology, message: message, document: try Fixtures.accepted(message.body).document)
        #expect(try NotificationJob(json: Data(exhausted.message.body)).retry == state)
        #expect(exhausted.message.headers["x-pushd-reason"] == .string("gave up after 4 attempts"))
    }
}
