extension PostgresConnection {
    /// Runs `body` between `BEGIN` and `COMMIT` on this connection; `ROLLBACK` if it throws.
    /// The body is isolated to the connection, so its statements run back to back on the
    /// connection's thread.
    public func transaction<Result: Sendable>(
        _ body: @Sendable (isolated PostgresConnection) async throws(StoreError) -> Result
    ) async throws(StoreError) -> Result {
        _ = try await query("BEGIN")
        do {
            let result = try await body(self)
            _ = try await query("COMMIT")
            return result
        } catch {
            if isUsable { _ = try? await query("ROLLBACK") }
            throw error
        }
    }
}
