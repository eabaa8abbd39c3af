import PushModel
import PushQueue

/// A message a job causes besides its pushes. The job is acked only once every follow-up
/// is confirmed by the broker.
enum FollowUp: Sendable, Equatable {
    /// Re-publish the job for these devices (`state.deviceIDs`) through a delay tier.
    case retry(NotificationJob.RetryState, tier: Topology.RetryTier)
    /// APNs or FCM declared a token dead: the cleanup consumer prunes it.
    case tokenInvalid(TokenInvalidEvent)
    /// A device was skipped for its unusable key.
    case keyInvalid(KeyInvalidEvent)
    /// The job (with `retry` state when devices ran out of tries, else as received) goes to
    /// the dead-letter queue with the reason.
    case deadLetter(DeadLetterReason, retry: NotificationJob.RetryState?)
    /// Every device of a job that asked for it reached a final state (`JobReport`).
    case jobCompleted(JobCompletedEvent)
}
