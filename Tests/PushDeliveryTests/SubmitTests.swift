import Foundation
import PushDelivery
import PushTestSupport
import Synchronization
import Testing

/// Pushes submitted without a task each (`APNsClient.submit`, what a worker's batches use)
/// against the shipped emulator: every completion called exactly once, the cases needing a
/// second exchange still settled as `send` settles them, and a cancelled group aborting
/// what it still has in flight.
@Suite("Submitted pushes", .serialized, .timeLimit(.minutes(2)))
struct SubmitTests {
    /// The outcomes of submitted pushes as they complete, and how many completions came.
    final class Completions: Sendable {
        let stream: AsyncStream<APNsClient.EnvironmentCheckedOutcome>
        private let continuation: AsyncStream<APNsClient.EnvironmentCheckedOutcome>.Continuation
        private let calls = Atomic<Int>(0)

        init() { (stream, continuation) = AsyncStream.makeStream() }

        var count: Int { calls.load(ordering: .relaxed) }

        func record(_ outcome: APNsClient.EnvironmentCheckedOutcome) {
            calls.add(1, ordering: .relaxed)
            continuation.yield(outcome)
        }

        func next(_ count: Int) async -> [APNsClient.EnvironmentCheckedOutcome] {
            var taken: [APNsClient.EnvironmentCheckedOutcome] = []
            for await outcome in stream {
                taken.append(outcome)
                if taken.count == count { break }
            }
            return taken
        }
    }

    func notification(_ token: String, environment: APNsEnvironment = .production) -> APNsNotification {
        APNsNotification(
            deviceToken: token, bundleID: EmulatorProcess.bundleID, environment: environment, expiration: 0,
            payload: EmulatorDeliveryTests.payload)
    }

    @Test("every outcome class settles as send settles it, the first push and BadDeviceToken included, each completion called once")
    func outcomesAsSend() async throws {
        let emulator = try EmulatorProcess.start()
        let client = try APNsClient(configuration: emulator.apnsConfiguration())
        client.start()
        let group = RequestGroup()
        let completions = Completions()
        // Before the first success (the awaited path, alone on the connection), then settled
        // on the loop thread: delivered, unregistered, a 5xx; a bad token tried elsewhere.
        let tokens = [
            EmulatorDeliveryTests.hexToken(), EmulatorDeliveryTests.hexToken(prefix: "410a"),
            EmulatorDeliveryTests.hexToken(prefix: "5000"), EmulatorDeliveryTests.hexToken(prefix: "400b"),
        ]
        await client.submit(notification(tokens[0]), group: group) { completions.record($0) }
        let first = await completions.next(1)
        for token in tokens.dropFirst() {
            await client.submit(notification(token), group: group) { completions.record($0) }
        }
        // A local problem never reaches the emulator.
        await client.submit(notification("not-hex"), group: group) { completions.record($0) }
        let outcomes = first + (await completions.next(tokens.count))
        var expected: [String: Int] = [:]
        for outcome in outcomes { expected[outcome.outcome.label, default: 0] += 1 }
        await client.shutdown()
        let stats = try await emulator.stats()
        await emulator.stop()
        #expect(expected == ["delivered": 1, "invalid_token": 3, "retry": 1], "\(outcomes)")
        #expect(outcomes.allSatisfy { $0.correctedEnvironment == nil })
        // The bad token was tried in both environments: five requests for four tokens.
        #expect(stats["total_requests"] as? Int == tokens.count + 1)
        #expect(completions.count == tokens.count + 1, "no completion called twice")
    }

    @Test("cancelling the group aborts its pushes still in flight and refuses later ones; answered ones stay answered")
    func cancelledGroup() async throws {
        let emulator = try EmulatorProcess.start(arguments: ["--slow-delay", "60"])
        var configuration = emulator.apnsConfiguration()
        configuration.requestTimeout = .seconds(120)
        // Fewer permits than pushes: the 20 answered must each have returned theirs for the
        // slow ones to be submitted at all.
        configuration.http.maximumInFlight = 12
        let client = try APNsClient(configuration: configuration)
        client.start()
        #expect(await client.send(notification(EmulatorDeliveryTests.hexToken())).label == "delivered")
        let group = RequestGroup()
        let completions = Completions()
        for index in 0..<20 {
            await client.submit(notification(EmulatorDeliveryTests.hexToken(unique: index + 1)), group: group) { completions.record($0) }
        }
        for index in 0..<10 {
            // Answered after 60 s, unless cancelled.
            let token = EmulatorDeliveryTests.hexToken(prefix: "5100", unique: index)
            await client.submit(notification(token), group: group) { completions.record($0) }
        }
        let fast = await completions.next(20)
        group.cancel()
        let aborted = await completions.next(10)
        await client.submit(notification(EmulatorDeliveryTests.hexToken(unique: 99)), group: group) { completions.record($0) }
        let late = await completions.next(1)
        await client.shutdown()
        await emulator.stop()
        #expect(fast.allSatisfy { $0.outcome.label == "delivered" }, "\(fast)")
        #expect(aborted.allSatisfy { $0.outcome == .retryLater(reason: "shutting down", retryAfter: nil) }, "\(aborted)")
        #expect(late.map(\.outcome) == [.retryLater(reason: "shutting down", retryAfter: nil)])
        #expect(completions.count == 31, "no completion called twice")
    }
}
