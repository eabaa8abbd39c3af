/// Polls `condition` until it holds or `timeout` passes: waiting for a state, not a time.
func waitUntil(
    timeout: Duration = .seconds(60), _ what: String, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestSetupError("timed out after \(timeout) waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
