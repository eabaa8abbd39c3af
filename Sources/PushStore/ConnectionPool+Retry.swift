import PushRuntime

extension ConnectionPool {
    /// Runs `operation`, and again after a backoff while it fails with a retryable error
    /// (`StoreError.isRetryable`), at most `attempts` times in all. Only for operations that
    /// are safe to repeat: a lost connection may have run the statement.
    public func retrying<Result: Sendable>(
        attempts: Int = 3,
        backoff: Backoff = Backoff(base: .milliseconds(50), cap: .seconds(1)),
        isolation: isolated (any Actor)? = #isolation,
        _ operation: () async throws(StoreError) -> Result
    ) async throws(StoreError) -> Result {
        var attempt = 0
        while true {
            do {
                return try await operation()
            } catch {
                attempt += 1
                guard error.isRetryable, attempt < attempts else { throw error }
                logger.info("retrying after a retryable store error", [
                    "attempt": .int(attempt), "error": .string(error.description),
                ])
                do { try await Task.sleep(for: backoff.delay(attempt: attempt - 1)) } catch { throw .cancelled }
            }
        }
    }
}
