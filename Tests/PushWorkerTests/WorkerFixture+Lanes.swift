import Foundation
import PushModel
import PushProducer
import PushQueue
import PushTestSupport

extension WorkerFixture {
    /// Sets `delivery.lane` and publishes the job as producers do, through `JobPublisher`
    /// (validated, routed to the lane's queue, confirmed).
    @discardableResult
    func publish(_ job: [String: Any], lane: NotificationJob.Lane) async throws -> NotificationJob {
        var job = job
        var delivery = job["delivery"] as? [String: Any] ?? [:]
        delivery["lane"] = lane.rawValue
        job["delivery"] = delivery
        let data = try JSONSerialization.data(withJSONObject: job)
        try await JobPublisher(connection: amqp, topology: topology).publish(json: [UInt8](data))
        return try NotificationJob(json: data)
    }

    /// Pushes the emulator accepted so far (a cheap counter, for polling).
    func acceptedCount() async throws -> Int {
        try await emulator.stats()["total_accepted"] as? Int ?? 0
    }

    /// Ready messages in both lanes.
    func readyJobs() async throws -> Int {
        try await amqp.statistics(queue: topology.jobsQueue).messages + amqp.statistics(queue: topology.bulkJobsQueue).messages
            + amqp.statistics(queue: topology.chunksQueue).messages
    }
}

/// Reads the emulator's push log incrementally, so a test that polls a large log does not
/// fetch it from the start each time.
final class PushLog: @unchecked Sendable {
    // `@unchecked Sendable`: used from one test task at a time (the fixture's rule).
    private let fixture: WorkerFixture
    private var cursor = 0
    private(set) var pushes: [WorkerFixture.Received] = []

    init(_ fixture: WorkerFixture) {
        self.fixture = fixture
    }

    /// Fetches what arrived since the last call; returns everything so far.
    @discardableResult
    func refresh() async throws -> [WorkerFixture.Received] {
        let records = try await fixture.emulator.pushes(since: cursor)
        cursor += records.count
        pushes += try records.compactMap { try WorkerFixture.received(from: $0) }
        return pushes
    }
}
