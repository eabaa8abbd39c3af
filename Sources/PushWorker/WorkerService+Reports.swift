import Foundation
import PushModel
import PushStore

extension WorkerService {
    /// What the tally says this message must do about `job.completed`.
    enum ReportStep: Sendable {
        /// The job did not ask for the event, or is not complete yet, or another part publishes it.
        case none
        /// Publish this event with the message's follow-ups, then mark it published.
        case publish(JobCompletedEvent)
        /// The database is unreachable: the job goes back to the queue.
        case failed(StoreError)
    }

    /// Records the message's outcomes (idempotent upserts) and, if its recording completed
    /// the job, builds the event. Runs before the follow-ups are published and the message is
    /// acked, so a crash anywhere leaves the message to be redelivered and recorded again.
    func recordReport(_ delivery: DeliveryReport, followUps: [FollowUp], for accepted: AcceptedJob) async -> ReportStep {
        guard let report = JobReport(delivery, followUps: followUps, for: accepted) else { return .none }
        do {
            let publishes = try await reports.record(
                jobID: report.jobID, chunks: report.chunks, chunk: report.chunk, entries: report.entries, gone: report.gone)
            guard publishes else { return .none }
            let summary = try await reports.summary(jobID: report.jobID)
            return .publish(JobCompletedEvent(jobID: report.jobID, chunks: report.chunks, summary: summary, occurredAt: Date()))
        } catch {
            return .failed(error)
        }
    }
}
