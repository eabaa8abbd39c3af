import PushRuntime
import Synchronization

/// Lets one request through until one has succeeded, then everyone at once.
///
/// APNs allows a single stream on a new token-authenticated connection until a request
/// with a valid token succeeds; fanning out before that only earns refused streams.
final class FirstSuccessGate: Sendable {
    private let opened = Atomic<Bool>(false)
    private let single = AsyncSemaphore(permits: 1)

    /// True once a request has succeeded: from then on requests need not pass `run`.
    var isOpen: Bool { opened.load(ordering: .acquiring) }

    nonisolated(nonsending) func run(_ body: nonisolated(nonsending) @Sendable () async -> Attempt) async -> Attempt {
        if opened.load(ordering: .acquiring) { return await body() }
        do { try await single.acquire() } catch {
            return Attempt(outcome: .retryLater(reason: "shutting down", retryAfter: nil), connectionLost: false)
        }
        if opened.load(ordering: .acquiring) {
            // Opened while this one waited: go through with everyone else, not holding the
            // permit (held, every request queued behind the first went one at a time: 600
            // pushes at 0.3 s each took 182 s).
            single.release()
            return await body()
        }
        defer { single.release() }
        let attempt = await body()
        // Any answer from APNs proves the token was checked (an invalid device token is
        // still an authenticated request); only auth and transport failures keep it closed.
        switch attempt.outcome {
        case .delivered, .invalidToken, .rejected:
            opened.store(true, ordering: .releasing)
        case .retryLater, .configurationError:
            break
        }
        return attempt
    }
}
