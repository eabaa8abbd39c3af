import Foundation
import PushModel
import PushStore

/// What one job message contributes to its job's outcome tally (`JobOutcomeTally`), for jobs
/// whose producer asked for `job.completed`.
///
/// Pure: results and the planner's follow-ups in, tally entries out, so the mapping from
/// delivery outcomes to the event's four final states is unit-tested without servers.
struct JobReport: Sendable, Equatable {
    /// The job id the tally is kept under (the original's for a chunk).
    let jobID: String
    /// Parts of the job: the chunk count, 1 when it was not split.
    let chunks: Int
    /// This message's part: the chunk index, 0 when it was not split.
    let chunk: Int
    let entries: [JobOutcomeTally.Entry]
    /// Devices a retry named that no longer exist: rejected.
    let gone: [Int64]

    /// nil when the job did not ask for `job.completed`. `report` must have kept the
    /// delivered devices' ids (`DeliveryReport(keepingDeliveredIDs: true)`).
    init?(_ report: DeliveryReport, followUps: [FollowUp], for accepted: AcceptedJob) {
        let job = accepted.job
        guard job.report.completedEvent else { return nil }
        jobID = job.reportJobID
        chunks = job.chunk?.count ?? 1
        chunk = job.chunk?.index ?? 0
        var exhausted = Set<Int64>()
        for case .deadLetter(.retriesExhausted, let state?) in followUps { exhausted.formUnion(state.deviceIDs) }
        var byDevice: [Int64: JobOutcomeTally.Entry] = [:]
        // A broadcast's stand-in device (id 0) is no device of the registry.
        for result in report.results where result.device.id > 0 {
            let outcome = exhausted.contains(result.device.id) ? .retriesExhausted : Self.outcome(result.outcome)
            byDevice[result.device.id] = JobOutcomeTally.Entry(deviceID: result.device.id, platform: result.device.platform, outcome: outcome)
        }
        for (platform, ids) in report.deliveredIDs {
            for id in ids where id > 0 { byDevice[id] = JobOutcomeTally.Entry(deviceID: id, platform: platform, outcome: .delivered) }
        }
        entries = byDevice.keys.sorted().compactMap { byDevice[$0] }
        gone = (accepted.retryDeviceIDs ?? []).filter { byDevice[$0] == nil }
    }

    /// The final state of a device, or nil while a retry is pending.
    static func outcome(_ outcome: DeviceOutcome) -> JobOutcomeTally.Outcome? {
        switch outcome {
        case .sent(.delivered): .delivered
        case .sent(.invalidToken), .keyInvalid: .invalid
        case .sent(.retryLater): nil
        // Not sent: the job's expiry came first (the event's "retries exhausted").
        case .expired: .retriesExhausted
        case .sent(.rejected), .sent(.configurationError), .sealingFailed, .skipped: .rejected
        }
    }
}

extension JobCompletedEvent {
    /// The event for a completed tally.
    init(jobID: String, chunks: Int, summary: JobOutcomeTally.Summary, occurredAt: Date) {
        var counts: [Platform: [Outcome: Int]] = [:]
        for (platform, outcomes) in summary.counts {
            for (outcome, count) in outcomes {
                if let outcome = Outcome(rawValue: outcome.rawValue) { counts[platform, default: [:]][outcome] = count }
            }
        }
        self.init(
            jobID: jobID, occurredAt: occurredAt, chunks: chunks, counts: counts,
            failedDeviceIDs: summary.failedDeviceIDs, failedDeviceIDsTruncated: summary.truncated)
    }
}
