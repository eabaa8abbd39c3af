import Foundation

/// `job.completed` (`Schemas/events/job.completed.v1.schema.json`): every device of a job
/// whose producer set `report.completed_event` reached a final state. Counts and device ids
/// only: no token, no content.
///
/// `eventID` is the job id, and so is the AMQP `message_id`: the de-duplication key. The
/// worker's tally publishes the event once; only a crash between the broker's confirm and
/// the tally noting it repeats it, with the same id, so a consumer that drops ids it has seen
/// handles each job exactly once.
public struct JobCompletedEvent: PushEvent, Hashable {
    public static let name = "job.completed"

    /// The final states a device's delivery can reach.
    public enum Outcome: String, Sendable, Hashable, Codable, CaseIterable {
        case delivered, invalid, rejected
        case retriesExhausted = "retries_exhausted"
    }

    public var eventID: String { jobID }
    public var jobID: String
    public var occurredAt: Date
    /// The parts the job was split into (1 if it was not).
    public var chunks: Int
    /// Per platform, devices per outcome; every outcome is present, zeros included.
    public var counts: [Platform: [Outcome: Int]]
    /// Devices that failed permanently (invalid, rejected, retries exhausted), ascending.
    public var failedDeviceIDs: [Int64]
    /// More devices failed than `failedDeviceIDs` lists (it holds at most 10,000).
    public var failedDeviceIDsTruncated: Bool

    public init(
        jobID: String, occurredAt: Date, chunks: Int, counts: [Platform: [Outcome: Int]], failedDeviceIDs: [Int64],
        failedDeviceIDsTruncated: Bool
    ) {
        self.jobID = jobID
        self.occurredAt = occurredAt
        self.chunks = chunks
        var complete: [Platform: [Outcome: Int]] = [:]
        for platform in Platform.allCases {
            for outcome in Outcome.allCases { complete[platform, default: [:]][outcome] = counts[platform]?[outcome] ?? 0 }
        }
        self.counts = complete
        self.failedDeviceIDs = failedDeviceIDs
        self.failedDeviceIDsTruncated = failedDeviceIDsTruncated
    }

    /// Devices in a final state, all platforms and outcomes.
    public var devices: Int { counts.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    enum CodingKeys: String, CodingKey {
        case version, event
        case eventID = "event_id", occurredAt = "occurred_at", jobID = "job_id", chunks, devices, counts
        case failedDeviceIDs = "failed_device_ids", failedDeviceIDsTruncated = "failed_device_ids_truncated"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try EventCoding.expect(Self.name, in: container, key: .event)
        let jobID = try EventCoding.decodeNonEmpty(container, .jobID)
        let raw = try container.decode([String: [String: Int]].self, forKey: .counts)
        var counts: [Platform: [Outcome: Int]] = [:]
        for (platform, outcomes) in raw {
            guard let platform = Platform(rawValue: platform) else { continue }
            for (outcome, count) in outcomes {
                if let outcome = Outcome(rawValue: outcome) { counts[platform, default: [:]][outcome] = count }
            }
        }
        self.init(
            jobID: jobID, occurredAt: try EventCoding.decodeDateIfPresent(container, .occurredAt) ?? Date(timeIntervalSince1970: 0),
            chunks: try container.decode(Int.self, forKey: .chunks), counts: counts,
            failedDeviceIDs: try container.decode([Int64].self, forKey: .failedDeviceIDs),
            failedDeviceIDsTruncated: try container.decodeIfPresent(Bool.self, forKey: .failedDeviceIDsTruncated) ?? false)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(1, forKey: .version)
        try container.encode(Self.name, forKey: .event)
        try container.encode(eventID, forKey: .eventID)
        try container.encode(RFC3339.string(from: occurredAt), forKey: .occurredAt)
        try container.encode(jobID, forKey: .jobID)
        try container.encode(chunks, forKey: .chunks)
        try container.encode(devices, forKey: .devices)
        var raw: [String: [String: Int]] = [:]
        for (platform, outcomes) in counts {
            for (outcome, count) in outcomes { raw[platform.rawValue, default: [:]][outcome.rawValue] = count }
        }
        try container.encode(raw, forKey: .counts)
        try container.encode(failedDeviceIDs, forKey: .failedDeviceIDs)
        try container.encode(failedDeviceIDsTruncated, forKey: .failedDeviceIDsTruncated)
    }
}
