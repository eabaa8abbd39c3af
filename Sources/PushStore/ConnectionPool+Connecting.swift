import PushRuntime

extension ConnectionPool {
    /// Opens one connection in the background, retrying with backoff while callers wait for
    /// it, and hands it to the first waiter (or the idle list).
    func startConnectionAttempts() {
        let id = state.withLock { $0.makeID() }
        let task = Task { [self] in
            await connectWithRetries()
            _ = state.withLock { $0.connectTasks.removeValue(forKey: id) }
        }
        state.withLock { state in
            // Finished already? Then removeValue above ran first and there is nothing to keep.
            if !task.isCancelled { state.connectTasks[id] = task }
        }
    }

    private func connectWithRetries() async {
        var attempt = 0
        while true {
            if state.withLock({ $0.machine.isShutDown }) {
                stopConnecting(reason: "the pool is shutting down")
                return
            }
            let number = counters.connectionNumbers.add(1, ordering: .relaxed).newValue
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: configuration, name: "pg-\(number)", logger: logger, counters: counters)
                counters.opened.add(1, ordering: .relaxed)
                logger.debug("postgres connection opened", ["connection": .string(connection.name)])
                await connected(connection)
                // Callers that waited the growth delay while this one was being opened and
                // still wait get the next one.
                if state.withLock({ $0.machine.growForOverdueWaiters() }) { startConnectionAttempts() }
                return
            } catch {
                counters.failedAttempts.add(1, ordering: .relaxed)
                let retry = state.withLock { $0.machine.connectFailed(error.description) }
                logger.warning("cannot open a postgres connection", [
                    "attempt": .int(attempt + 1), "error": .string(error.description), "will_retry": .bool(retry),
                ])
                guard retry else {
                    // Given up because other attempts cover the waiters; an overdue one may
                    // still be owed its own.
                    if state.withLock({ $0.machine.growForOverdueWaiters() }) { startConnectionAttempts() }
                    signalIfShutdownComplete()
                    return
                }
                try? await Task.sleep(for: configuration.reconnectBackoff.delay(attempt: attempt))
                attempt += 1
            }
        }
    }

    private func connected(_ connection: PostgresConnection) async {
        let (action, timer) = state.withLock { state in
            let action = state.machine.connected(connection)
            var timer: Task<Void, Never>?
            if case .handOver(_, let waiter) = action { timer = state.timers.removeValue(forKey: waiter.id) }
            return (action, timer)
        }
        timer?.cancel()
        switch action {
        case .none: break
        case .handOver(let connection, let waiter): waiter.continuation.resume(returning: .success(connection))
        case .close(let connection): await close(connection)
        }
    }

    private func stopConnecting(reason: String) {
        _ = state.withLock { $0.machine.connectFailed(reason) }
        signalIfShutdownComplete()
    }

    func signalIfShutdownComplete() {
        if state.withLock({ $0.machine.isShutdownComplete }) { finished.trigger() }
    }
}
