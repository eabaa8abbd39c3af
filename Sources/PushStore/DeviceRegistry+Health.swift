extension DeviceRegistry {
    /// Whether the registry answers a trivial query now: how a worker that paused for an
    /// outage learns that PostgreSQL is back.
    public func isReachable() async -> Bool {
        (try? await pool.query("SELECT 1").count) == 1
    }
}
