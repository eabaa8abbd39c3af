import Foundation
import PushModel
import PushQueue

/// Publishes notification jobs, for Swift producers (and `pushd enqueue`): each job is
/// validated against the job schema first, then published persistent to the jobs exchange
/// with publisher confirms, so `publish` returns only once the broker has taken
/// responsibility for it.
public struct JobPublisher: Sendable {
    public let connection: AMQPConnection
    public let topology: Topology

    public init(connection: AMQPConnection, topology: Topology = Topology()) {
        self.connection = connection
        self.topology = topology
    }

    public enum PublishError: Error, CustomStringConvertible {
        case invalidJob(JobValidationError)
        case broker(QueueError)

        public var description: String {
            switch self {
            case .invalidJob(let error): "invalid job: \(error)"
            case .broker(let error): "broker: \(error)"
            }
        }
    }

    /// Validates and publishes one job (JSON bytes); the job id becomes the message id.
    public func publish(json: [UInt8]) async throws(PublishError) {
        let request = try Self.request(json: json, topology: topology)
        do { try await connection.publish(request) } catch { throw .broker(error) }
    }

    /// Validates all, then publishes them pipelined; one result per job, in order.
    public func publish(jobs: [[UInt8]]) async -> [Result<Void, PublishError>] {
        var results = [Result<Void, PublishError>?](repeating: nil, count: jobs.count)
        var requests: [(index: Int, request: PublishRequest)] = []
        for (index, json) in jobs.enumerated() {
            do throws(PublishError) {
                requests.append((index, try Self.request(json: json, topology: topology)))
            } catch {
                results[index] = .failure(error)
            }
        }
        let confirmations = await connection.publish(requests.map(\.request))
        for (entry, confirmation) in zip(requests, confirmations) {
            results[entry.index] = confirmation.mapError { PublishError.broker($0) }
        }
        return results.map { $0 ?? .failure(.broker(.closed)) }
    }

    static func request(json: [UInt8], topology: Topology) throws(PublishError) -> PublishRequest {
        // Workers dead-letter a larger body unread.
        guard json.count <= NotificationJob.maximumBodyBytes else {
            throw .invalidJob(JobValidationError(
                "job", "is \(json.count) bytes; workers read at most \(NotificationJob.maximumBodyBytes) (2 MiB)"))
        }
        let job: NotificationJob
        do { job = try NotificationJob(json: Data(json)) } catch { throw .invalidJob(error) }
        // Workers would dead-letter it as forged: refuse it here, where the producer sees why.
        if job.retry != nil {
            throw .invalidJob(JobValidationError("retry", "is worker-internal state; producers must not set it"))
        }
        if job.chunk != nil {
            throw .invalidJob(JobValidationError("chunk", "is worker-internal state (a split job's part); producers must not set it"))
        }
        var message = OutgoingMessage(body: json, contentType: "application/json", messageID: job.jobID)
        // The first-attempt time for jobs without retry state (TTL and maximum age count from it).
        message.timestamp = UInt64(Date().timeIntervalSince1970)
        // The job's lane picks the queue; mandatory, so a lane whose queue is missing (a
        // broker not yet migrated to lanes) is reported instead of dropping the job.
        return PublishRequest(exchange: topology.jobsExchange, routingKey: job.delivery.lane.routingKey, message: message, mandatory: true)
    }
}
