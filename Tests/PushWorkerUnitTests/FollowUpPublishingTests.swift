import PushQueue
@testable import PushWorker
import Synchronization
import Testing

/// A job's follow-ups are confirmed before its ack: while the publishing connection refuses
/// them for a reason that passes (blocked, reconnecting), the job is held, unacked, and only
/// the refused ones are published again.
@Suite("Follow-ups held while the publishing connection recovers")
struct FollowUpPublishingTests {
    /// A publisher that refuses `refusing` with `error` for its first `times` calls.
    final class Publisher: Sendable {
        let calls = Mutex<[[String]]>([])
        let pauses = Mutex<[Duration]>([])
        let refusing: Set<String>
        let error: QueueError
        let times: Int

        init(refusing: Set<String>, error: QueueError = .brokerBlocked(reason: "low on memory"), times: Int) {
            self.refusing = refusing
            self.error = error
            self.times = times
        }

        func publish(_ requests: [PublishRequest]) -> [Result<Void, QueueError>] {
            let ids = requests.map { $0.message.messageID ?? "" }
            let call = calls.withLock { calls in
                calls.append(ids)
                return calls.count
            }
            return ids.map { call <= times && refusing.contains($0) ? .failure(error) : .success(()) }
        }
    }

    static let requests = ["retry", "event", "dead"].map { id in
        PublishRequest(exchange: "pushd.retry", routingKey: "due", message: OutgoingMessage(body: [], contentType: "application/json", messageID: id))
    }

    func run(_ publisher: Publisher, attempts: Int = 30, stopping: Bool = false) async -> FollowUpPublishing.Refusal? {
        var publishing = FollowUpPublishing()
        publishing.attempts = attempts
        return await publishing.publish(Self.requests, with: { publisher.publish($0) }, pause: { delay in
            publisher.pauses.withLock { $0.append(delay) }
            return !stopping
        })
    }

    @Test("refused while blocked: held, only the refused follow-up published again, confirmed at the third try")
    func heldUntilConfirmed() async {
        let publisher = Publisher(refusing: ["event"], times: 2)
        #expect(await run(publisher) == nil)
        #expect(publisher.calls.withLock { $0 } == [["retry", "event", "dead"], ["event"], ["event"]])
        #expect(publisher.pauses.withLock { $0 } == [.milliseconds(250), .milliseconds(500)])
    }

    @Test("a refusal waiting cannot fix (unroutable) goes back at once; so does every refusal once the worker stops or the tries run out")
    func givesUp() async {
        let unroutable = Publisher(
            refusing: ["dead"], error: .unroutable(exchange: "pushd.dead", routingKey: "", replyCode: 312, replyText: "NO_ROUTE"), times: 100)
        #expect(await run(unroutable)?.count == 1)
        #expect(unroutable.calls.withLock { $0.count } == 1 && unroutable.pauses.withLock { $0.isEmpty })

        let stopping = Publisher(refusing: ["retry", "event"], times: 100)
        let stopped = await run(stopping, stopping: true)
        #expect(stopped?.count == 2 && stopping.calls.withLock { $0.count } == 1)

        let blockedForGood = Publisher(refusing: ["retry"], times: 100)
        #expect(await run(blockedForGood, attempts: 4)?.count == 1)
        #expect(blockedForGood.calls.withLock { $0.count } == 4)
    }
}
