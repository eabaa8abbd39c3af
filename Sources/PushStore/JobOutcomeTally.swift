import PushModel

/// The PostgreSQL tally behind `job.completed` events (`Schemas/sql/0006_job_outcomes.sql`):
/// each message of a job that asked for the event records its devices' outcomes; the one
/// whose recording completes the job publishes the event. Every write is an idempotent
/// upsert, so at-least-once redelivery, retries and re-split chunks count each device once.
public struct JobOutcomeTally: Sendable {
    /// A device's state in the tally; `nil` outcome while a retry is pending.
    public enum Outcome: String, Sendable, CaseIterable {
        case delivered, invalid, rejected
        case retriesExhausted = "retries_exhausted"
    }

    public struct Entry: Sendable, Equatable {
        public let deviceID: Int64
        public let platform: Platform
        public let outcome: Outcome?

        public init(deviceID: Int64, platform: Platform, outcome: Outcome?) {
            self.deviceID = deviceID
            self.platform = platform
            self.outcome = outcome
        }
    }

    /// What `job.completed` reports.
    public struct Summary: Sendable, Equatable {
        /// Devices per platform and outcome (a device named by two parts counts twice).
        public var counts: [Platform: [Outcome: Int]]
        /// Devices that failed permanently (every outcome but delivered), ascending, at most
        /// `limit`.
        public var failedDeviceIDs: [Int64]
        /// More devices failed than listed.
        public var truncated: Bool
    }

    public let pool: ConnectionPool

    public init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// Records one message's outcomes (`chunk` 0 of 1 for a job that was not split); returns
    /// true if this message must now publish the job's `job.completed` event.
    public func record(
        jobID: String, chunks: Int, chunk: Int, entries: [Entry], gone: [Int64]
    ) async throws(StoreError) -> Bool {
        let row = try await pool.query("""
            SELECT pushd_record_job_outcomes(\(jobID), \(Int32(chunks)), \(Int32(chunk)),
                \(entries.map(\.deviceID)), \(entries.map(\.platform.rawValue)), \(entries.map { $0.outcome?.rawValue }), \(gone))
            """).singleRow()
        return try row.decode(Bool.self, column: 0)
    }

    /// The counts and the permanently failed devices of a job.
    public func summary(jobID: String, limit: Int = 10_000) async throws(StoreError) -> Summary {
        var counts: [Platform: [Outcome: Int]] = [:]
        let grouped = try await pool.query("""
            SELECT platform, outcome, count(*) FROM pushd_job_outcomes
            WHERE job_id = \(jobID) AND outcome IS NOT NULL GROUP BY platform, outcome
            """)
        for row in grouped {
            let (platform, outcome, count) = try row.decode((String, String, Int64).self)
            guard let platform = Platform(rawValue: platform), let outcome = Outcome(rawValue: outcome) else { continue }
            counts[platform, default: [:]][outcome] = Int(count)
        }
        let failed = try await pool.query("""
            SELECT DISTINCT device_id FROM pushd_job_outcomes
            WHERE job_id = \(jobID) AND outcome <> 'delivered' ORDER BY device_id LIMIT \(Int64(limit + 1))
            """).map { row throws(StoreError) in try row.decode(Int64.self, column: 0) }
        return Summary(counts: counts, failedDeviceIDs: Array(failed.prefix(limit)), truncated: failed.count > limit)
    }

    /// The broker confirmed the event: later messages of the completing part do not publish it again.
    public func markPublished(jobID: String) async throws(StoreError) {
        _ = try await pool.query("SELECT pushd_mark_job_completed_published(\(jobID))")
    }
}
