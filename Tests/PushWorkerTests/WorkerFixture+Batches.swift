import Foundation
import PushTestSupport

/// A batch of jobs and the wait for its first pushes: what the fault tests do before they
/// break something.
extension WorkerFixture {
    /// Publishes one job per `perJob` recipients, in order, with ids `<prefix>-<label>-<n>`;
    /// returns the job id of each recipient (its pushes carry it as collapse id).
    func publishJobs(for recipients: [String], perJob: Int, label: String) async throws -> [String: String] {
        var jobOfRecipient: [String: String] = [:]
        for (part, start) in stride(from: 0, to: recipients.count, by: perJob).enumerated() {
            let slice = Array(recipients[start..<min(start + perJob, recipients.count)])
            let id = "\(prefix)-\(label)-\(part)"
            _ = try await publish(job(id: id, recipients: slice, title: "Secret"))
            for recipient in slice { jobOfRecipient[recipient] = id }
        }
        return jobOfRecipient
    }

    /// Polls the emulator until it has accepted at least `count` pushes (repeats included).
    /// Gives up early, returning false, once none of `workers` (if any are given) is running.
    func waitForAccepted(_ count: Int, timeout: Duration, workers: [PushdProcess] = []) async throws -> Bool {
        var allExited = false
        let accepted = try await waitUntil(timeout: timeout, every: .milliseconds(50)) {
            allExited = !workers.isEmpty && !workers.contains { $0.isRunning }
            if allExited { return true }
            return try await emulator.stats()["total_accepted"] as? Int ?? 0 >= count
        }
        return accepted && !allExited
    }
}
