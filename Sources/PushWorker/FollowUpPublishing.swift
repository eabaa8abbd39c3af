import PushQueue
import PushRuntime

/// Publishes a job's follow-ups (retries, events, dead letters, chunks) and waits for the
/// broker's confirms, holding the job while its publishing connection recovers.
///
/// The job is acked only once every follow-up is confirmed. Sent back to the queue at the
/// first refusal, a job whose consuming connection is fine while its publishing one is not
/// (blocked by a memory or disk alarm, reconnecting on its own schedule in a failover) came
/// straight back, pushed its devices again and, each return counted by the quorum queue's
/// `x-delivery-limit`, was dead-lettered after twenty rounds. Held here, unacked, it is
/// counted once; only the refused follow-ups are published again, so the confirmed ones are
/// not repeated.
struct FollowUpPublishing: Sendable {
    /// Publishes and waits for the confirms, one result per request.
    typealias Publish = @Sendable ([PublishRequest]) async -> [Result<Void, QueueError>]
    /// Waits before another try; false if the worker is stopping (stop holding).
    typealias Pause = @Sendable (Duration) async -> Bool

    /// Tries in all before the job goes back to the queue: about two minutes with `backoff`.
    var attempts = 30
    var backoff = Backoff(base: .milliseconds(250), cap: .seconds(5))

    /// What was still refused when holding stopped.
    struct Refusal: Error, Sendable {
        let count: Int
        let error: QueueError
    }

    /// nil once the broker confirmed every request. Stops at a refusal that waiting cannot fix
    /// (an unroutable follow-up, a closed connection), when `pause` says the worker stops, or
    /// after `attempts`.
    func publish(
        _ requests: [PublishRequest], with publish: Publish, pause: Pause, onFirstRefusal: (Refusal) -> Void = { _ in }
    ) async -> Refusal? {
        var pending = requests
        var attempt = 0
        while true {
            let confirmations = await publish(pending)
            var refused: [PublishRequest] = []
            var last: QueueError?
            for (request, confirmation) in zip(pending, confirmations) {
                if case .failure(let error) = confirmation {
                    refused.append(request)
                    if last == nil || !error.isRetryable { last = error }
                }
            }
            guard let error = last else { return nil }
            let refusal = Refusal(count: refused.count, error: error)
            attempt += 1
            guard error.isRetryable, attempt < attempts else { return refusal }
            if attempt == 1 { onFirstRefusal(refusal) }
            guard await pause(backoff.upperBound(attempt: attempt - 1)) else { return refusal }
            pending = refused
        }
    }
}
