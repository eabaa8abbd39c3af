import Foundation
import PushModel
@testable import PushWorker
import Testing

@Suite("Intake and planner hardening")
struct IntakeHardeningTests {
    static let retry = #"{"attempt":2,"first_attempt_at":"2026-01-01T00:00:00Z","device_ids":[4,5]}"#

    @Test("retry state from the producers' queue is forged; from the retries queue it is trusted")
    func forgedRetryState() {
        let body = Fixtures.jobJSON(retry: Self.retry)
        #expect(JobIntake().accept(body, publishedAt: nil, now: Fixtures.now) == .deadLetter(.forgedRetryState))
        guard case .accepted(let job) = JobIntake().accept(body, publishedAt: nil, now: Fixtures.now, source: .retries) else {
            Issue.record("a worker's retry was refused")
            return
        }
        #expect(job.retryDeviceIDs == [4, 5])
        #expect(DeadLetterReason.forgedRetryState.cause == "forged_retry_state")
    }

    @Test("a split job's chunk from a producers' queue is forged; from the workers' chunks queue it is trusted")
    func forgedChunkState() throws {
        let recipients = (1...20).map { #""user-\#($0)""# }.joined(separator: ",")
        let original = String(decoding: Fixtures.jobJSON(), as: UTF8.self)
            .replacingOccurrences(of: #""recipient_ids":["user-1"]"#, with: #""recipient_ids":["# + recipients + "]")
        let chunk = try JobDocument(json: Data(original.utf8)).chunks(chunkSize: 10)[0].json
        #expect(JobIntake().accept(chunk, publishedAt: nil, now: Fixtures.now, source: .producers) == .deadLetter(.forgedChunkState))
        guard case .accepted(let job) = JobIntake().accept(chunk, publishedAt: nil, now: Fixtures.now, source: .chunks) else {
            Issue.record("a worker's chunk was refused")
            return
        }
        #expect(job.job.chunk != nil && job.job.recipientCount == 10)
        #expect(DeadLetterReason.forgedChunkState.cause == "forged_chunk_state")
    }

    @Test("a retry may name at most 10,000 devices")
    func retryDevicesBounded() {
        let ids = (1...10_001).map(String.init).joined(separator: ",")
        let body = Fixtures.jobJSON(retry: #"{"attempt":2,"first_attempt_at":"2026-01-01T00:00:00Z","device_ids":["# + ids + "]}")
        guard case .deadLetter(.malformed(let error)) = JobIntake().accept(body, publishedAt: nil, now: Fixtures.now, source: .retries) else {
            Issue.record("accepted a retry of 10,001 devices")
            return
        }
        #expect(error.path == "retry.device_ids")
    }

    @Test("a retry of 25,000 devices is split into messages of at most 10,000")
    func retryChunks() {
        let chunks = FollowUpPlanner.chunks((1...25_000).map(Int64.init))
        #expect(chunks.map(\.count) == [10_000, 10_000, 5_000])
        #expect(chunks.flatMap { $0 } == (1...25_000).map(Int64.init))
    }

    @Test("recipients are resolved in bounded batches")
    func batches() throws {
        let ids = (0..<1200).map { "\"r\($0)\"" }.joined(separator: ",")
        let body = Array(String(decoding: Fixtures.jobJSON(), as: UTF8.self)
            .replacingOccurrences(of: #"["user-1"]"#, with: "[" + ids + "]").utf8)
        let job = try Fixtures.accepted(body)
        let batches = JobProcessor.batches(of: job, size: 500)
        #expect(batches.count == 3)
        guard case .recipients(let last) = batches.last else { Issue.record("not recipients"); return }
        #expect(last.count == 200)
    }

    @Test("ttl_seconds 0: apns-expiration 0, one first attempt, never a later one; a passed expires_at is not sent")
    func expiry() throws {
        let once = try Fixtures.accepted(Fixtures.jobJSON(#""delivery":{"ttl_seconds":0}"#), publishedAt: 1_700_000_000)
        #expect(once.apnsExpiration == 0)
        #expect(!once.hasExpired(now: Fixtures.now))
        let passed = try Fixtures.accepted(Fixtures.jobJSON(#""delivery":{"expires_at":1700000000}"#))
        #expect(passed.hasExpired(now: Fixtures.now))
        #expect(passed.apnsExpiration == 1_700_000_000)
        let open = try Fixtures.accepted()
        #expect(!open.hasExpired(now: Fixtures.now) && open.apnsExpiration == nil)
    }
}

extension IntakeHardeningTests {
    @Test("a retry of a device-ids job reaches only the job's own device ids")
    func retryWithinAddressees() throws {
        let body = String(decoding: Fixtures.jobJSON(retry: #"{"attempt":2,"first_attempt_at":"2026-01-01T00:00:00Z","device_ids":[4,5,99]}"#), as: UTF8.self)
            .replacingOccurrences(of: #""recipients":{"recipient_ids":["user-1"]}"#, with: #""recipients":{"device_ids":[4,5,6]}"#)
        let job = try Fixtures.accepted(Array(body.utf8))
        #expect(JobProcessor.batches(of: job, size: 500) == [.devices([4, 5])])
    }
}

extension IntakeHardeningTests {
    @Test("a producer's timestamp later than now counts as now: no longer TTL, no trap", arguments: [
        UInt64.max, UInt64(Int64.max), 2_115_000_000,
    ])
    func futureTimestamp(publishedAt: UInt64) throws {
        let body = Fixtures.jobJSON(#""delivery":{"ttl_seconds":60}"#)
        guard case .accepted(let job) = JobIntake().accept(body, publishedAt: publishedAt, now: Fixtures.now, source: .producers) else {
            Issue.record("refused")
            return
        }
        #expect(job.firstAttemptAt == Fixtures.now)
        #expect(job.expiresAt == Fixtures.now.addingTimeInterval(60))
        #expect(job.apnsExpiration == 1_800_000_060)
        // Built for every job before its devices are looked up; it traps on an unbounded expiry.
        #expect(JobContext(job).apnsExpiration == 1_800_000_060)
        // An earlier timestamp is the producer's to give.
        let earlier = try Fixtures.accepted(body, publishedAt: 1_799_999_000)
        #expect(earlier.expiresAt == Date(timeIntervalSince1970: 1_799_999_060))
    }

    @Test("expires_at beyond 9999-12-31T23:59:59Z is refused; at it, a job is accepted and FCM keeps it 28 days")
    func expiresAtBounded() throws {
        for late in ["253402300800", "9223372036854775807"] {
            let decision = JobIntake().accept(Fixtures.jobJSON(#""delivery":{"expires_at":\#(late)}"#), publishedAt: nil, now: Fixtures.now)
            guard case .deadLetter(let reason) = decision else { Issue.record("accepted expires_at \(late)"); continue }
            #expect(reason.cause == "malformed")
            #expect(reason.description.contains("delivery.expires_at"))
        }
        let latest = try Fixtures.accepted(Fixtures.jobJSON(#""delivery":{"expires_at":253402300799}"#))
        let context = JobContext(latest)
        #expect(context.apnsExpiration == 253_402_300_799)
        let body = String(decoding: try context.fcmTemplate.body(token: "t", encryptedData: nil), as: UTF8.self)
        #expect(body.contains(#""ttl":"2419200s""#))
    }
}
