/// Exponential backoff with full jitter ("AWS architecture blog" style): attempt n waits a
/// random time in [0, min(cap, base · 2ⁿ)], so many clients that failed together do not
/// retry together.
public struct Backoff: Sendable {
    public var base: Duration
    public var cap: Duration

    public init(base: Duration = .milliseconds(100), cap: Duration = .seconds(30)) {
        self.base = base
        self.cap = cap
    }

    /// The delay before retry number `attempt` (0-based).
    public func delay(attempt: Int) -> Duration {
        let ceiling = upperBound(attempt: attempt)
        let fraction = Double.random(in: 0...1)
        return ceiling * fraction
    }

    /// The largest delay `delay(attempt:)` can return.
    public func upperBound(attempt: Int) -> Duration {
        let exponent = min(max(attempt, 0), 30)
        let grown = base * Double(1 << exponent)
        return grown < cap ? grown : cap
    }
}
