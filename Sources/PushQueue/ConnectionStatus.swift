/// A snapshot of a connection's health, readable from any thread without waiting for the
/// connection (health checks, metrics).
public struct ConnectionStatus: Sendable, Equatable {
    public enum State: String, Sendable, Equatable {
        /// Created, `start()` not called yet.
        case idle
        /// Connecting for the first time, or again after a failure.
        case connecting
        case connected
        /// Waiting out the backoff before the next attempt.
        case reconnecting
        /// Gave up: before the first connection, every endpoint refused in a way retrying
        /// cannot fix (`lastError`).
        case failed
        case closed
    }

    public internal(set) var state: State = .idle
    /// Why the connection last failed; kept after recovering, for diagnosis.
    public internal(set) var lastError: QueueError?
    /// Successful connections after the first one.
    public internal(set) var reconnects = 0
    /// Failed connection attempts since the last success.
    public internal(set) var failedAttempts = 0
    /// Set while the broker blocks publishing (memory or disk alarm).
    public internal(set) var blockedReason: String?
    public internal(set) var connectedSince: ContinuousClock.Instant?
    /// The broker (`host:port`) connected to, being tried, or to be tried next.
    public internal(set) var endpoint: String?

    /// Connected and allowed to publish.
    public var isHealthy: Bool { state == .connected && blockedReason == nil }
}
