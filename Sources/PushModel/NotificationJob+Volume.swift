/// High-volume fields of a job: the lane it waits in, the chunk a split job's part carries,
/// and the outcome report a producer may ask for.
extension NotificationJob {
    /// Which jobs queue a job waits in. Each lane is its own quorum queue and every worker
    /// consumes both with its own prefetch, so a bulk backlog never delays an urgent job.
    public enum Lane: String, Sendable, CaseIterable {
        /// The default: chat messages, reminders, anything a person waits for.
        case urgent
        /// Campaigns and other large sends; also where split chunks go.
        case bulk

        /// The routing key on the jobs exchange (`Topology.jobRoutingKey` / `bulkRoutingKey`;
        /// a unit test keeps them equal): urgent keeps `job`, the key every job used before
        /// lanes, so existing producers need no change.
        public var routingKey: String {
            switch self {
            case .urgent: "job"
            case .bulk: "bulk"
            }
        }
    }

    /// Worker-internal: this job is part `index` (1-based) of `count` of the job `jobID`,
    /// which a worker split because it had more recipients than its chunk size. A chunk is
    /// never split again.
    public struct Chunk: Sendable, Equatable {
        /// `"#"` plus up to five digits: a job has at most 10,000 recipients.
        public static let maximumSuffixLength = 8

        public var jobID: String
        public var index: Int
        public var count: Int

        public init(jobID: String, index: Int, count: Int) {
            self.jobID = jobID
            self.index = index
            self.count = count
        }

        /// The chunk's own job id (and message id): deterministic, so a redelivered original
        /// splits into the same ids.
        public static func id(of jobID: String, index: Int) -> String { "\(jobID)#\(index)" }
    }

    /// What the producer asks to hear back.
    public struct Report: Sendable, Equatable {
        /// Publish one `job.completed` event once every device reached a final state.
        public var completedEvent: Bool

        public init(completedEvent: Bool = false) {
            self.completedEvent = completedEvent
        }
    }

    /// The id outcome reports are kept under: the original job's for a chunk.
    public var reportJobID: String { chunk?.jobID ?? jobID }

    /// The recipients, as many as there are (recipient ids or device ids).
    public var recipientCount: Int {
        switch recipients {
        case .recipientIDs(let ids): ids.count
        case .deviceIDs(let ids): ids.count
        }
    }

    static func lane(reading delivery: FieldReader) throws(JobValidationError) -> Lane {
        let text = try delivery.optionalString("lane", maxBytes: 16) ?? Lane.urgent.rawValue
        guard let lane = Lane(rawValue: text) else {
            throw JobValidationError("delivery.lane", "must be \"urgent\" or \"bulk\", got \"\(text)\"")
        }
        return lane
    }

    static func chunk(reading job: FieldReader) throws(JobValidationError) -> Chunk? {
        guard let chunk = try job.optionalObject("chunk") else { return nil }
        let jobID = try chunk.string("job_id", maxBytes: maximumJobIDLength)
        let count = try chunk.int("count")
        let index = try chunk.int("index")
        guard count >= 1, count <= Int64(maximumRecipients) else {
            throw JobValidationError("chunk.count", "must be between 1 and \(maximumRecipients)")
        }
        guard index >= 1, index <= count else { throw JobValidationError("chunk.index", "must be between 1 and chunk.count") }
        return Chunk(jobID: jobID, index: Int(index), count: Int(count))
    }

    static func report(reading job: FieldReader) throws(JobValidationError) -> Report {
        guard let report = try job.optionalObject("report") else { return Report() }
        guard let flag = report.value.objectField("completed_event") else { return Report() }
        guard case .bool(let completed) = flag else { throw JobValidationError("report.completed_event", "must be true or false") }
        return Report(completedEvent: completed)
    }
}

extension JSONValue {
    fileprivate func objectField(_ key: String) -> JSONValue? {
        guard case .object(let fields) = self, let field = fields[key], field != .null else { return nil }
        return field
    }
}
