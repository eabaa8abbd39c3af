import PushModel

/// Why a message goes to the dead-letter queue; its description is the `x-pushd-reason`
/// header, its `cause` the label of `pushd_dead_letters_total`.
enum DeadLetterReason: Sendable, Equatable, CustomStringConvertible {
    /// Larger than `JobIntake.maximumBytes`: dead-lettered unread.
    case oversize(bytes: Int, limit: Int)
    /// Not a valid job (`Schemas/job.v1.schema.json`).
    case malformed(JobValidationError)
    /// Devices still failing when the retry policy gave up.
    case retriesExhausted(RetryPolicy.GiveUp)
    /// A job on the producers' queue carrying the worker's `retry` state: only workers may
    /// set it, through the retry exchange.
    case forgedRetryState
    /// A job on a producers' queue carrying a split job's `chunk` block: only workers split
    /// jobs, publishing the chunks through the retry exchange. A forged one could otherwise
    /// count against another job's outcome tally.
    case forgedChunkState

    var cause: String {
        switch self {
        case .oversize: "oversize"
        case .malformed: "malformed"
        case .retriesExhausted: "retries_exhausted"
        case .forgedRetryState: "forged_retry_state"
        case .forgedChunkState: "forged_chunk_state"
        }
    }

    var description: String {
        switch self {
        case .oversize(let bytes, let limit): "oversize job: \(bytes) bytes, the limit is \(limit)"
        case .malformed(let error): "malformed job: \(error.description)"
        case .retriesExhausted(let why): why.description
        case .forgedRetryState:
            "forged retry state: a job from producers must not carry \"retry\" (only workers set it, through the retry exchange)"
        case .forgedChunkState:
            "forged chunk state: a job from producers must not carry \"chunk\" (only workers split jobs, through the retry exchange)"
        }
    }
}
