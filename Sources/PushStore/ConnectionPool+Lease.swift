import PushRuntime

extension ConnectionPool {
    /// A connection for the caller's exclusive use until `release`. Waits, at most until
    /// `deadline`, for one to be returned or opened.
    func lease(deadline: ContinuousClock.Instant) async throws(StoreError) -> PostgresConnection {
        let id = state.withLock { $0.makeID() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let action = state.withLock { $0.machine.lease(id: id, waiter: Waiter(id: id, continuation: continuation)) }
                switch action {
                case .use(let connection):
                    continuation.resume(returning: .success(connection))
                case .fail(let error):
                    continuation.resume(returning: .failure(error))
                case .wait(let startConnecting):
                    if startConnecting { startConnectionAttempts() }
                    // No growth check past the deadline: the caller would time out late (a second
                    // lease of `query` or `withConnection` keeps its first deadline).
                    let growthAt = ContinuousClock.now + configuration.poolGrowthDelay
                    let growth = startConnecting || configuration.poolGrowthDelay <= .zero || growthAt >= deadline ? nil : growthAt
                    armTimer(waiter: id, growthCheck: growth, deadline: deadline)
                    // A cancellation that came before the waiter was queued found nothing to remove.
                    if Task.isCancelled { abandon(waiter: id, with: .cancelled) }
                }
            }
        } onCancel: {
            abandon(waiter: id, with: .cancelled)
        }
        return try result.get()
    }

    /// Gives a leased connection back: to the next waiter, to the idle list, or — broken or
    /// left inside a transaction — to be closed.
    func release(_ connection: PostgresConnection) async {
        if let broken = returnToPool(connection) { await close(broken) }
    }

    /// `release` up to the close, callable on any thread (the connection's own, right after
    /// its statement): returns the connection if the caller must close it.
    func returnToPool(_ connection: PostgresConnection) -> PostgresConnection? {
        let usable = connection.isUsable
        let reusable = usable && connection.isIdleOutsideTransaction
        if usable && !reusable {
            logger.warning("connection returned inside a transaction; closing it", ["connection": .string(connection.name)])
        }
        let (action, timer) = state.withLock { state in
            let action = state.machine.release(connection, reusable: reusable)
            var timer: Task<Void, Never>?
            if case .handOver(_, let waiter) = action { timer = state.timers.removeValue(forKey: waiter.id) }
            return (action, timer)
        }
        timer?.cancel()
        switch action {
        case .none:
            return nil
        case .handOver(let connection, let waiter):
            waiter.continuation.resume(returning: .success(connection))
            return nil
        case .close(let connection, let startConnecting):
            if !usable { counters.discarded.add(1, ordering: .relaxed) }
            if startConnecting { startConnectionAttempts() }
            return connection
        }
    }

    /// Fails a waiter that is still queued (timed out or cancelled).
    func abandon(waiter id: UInt64, with error: StoreError) {
        let (waiter, timer, lastConnectError) = state.withLock { state in
            (state.machine.removeWaiter(id: id), state.timers.removeValue(forKey: id), state.machine.lastConnectError)
        }
        timer?.cancel()
        guard let waiter else { return }
        if case .poolTimeout = error {
            waiter.continuation.resume(returning: .failure(
                .poolTimeout(waited: configuration.acquireTimeout, lastConnectError: lastConnectError)))
        } else {
            waiter.continuation.resume(returning: .failure(error))
        }
    }

    /// One task per waiting caller, cancelled when it is served: at `growthCheck` (if any) it
    /// asks the pool to grow for the caller, at `deadline` it fails the caller.
    private func armTimer(waiter id: UInt64, growthCheck: ContinuousClock.Instant?, deadline: ContinuousClock.Instant) {
        let timer = Task { [weak self] in
            if let growthCheck {
                try? await Task.sleep(until: growthCheck, clock: .continuous)
                guard !Task.isCancelled else { return }
                self?.growIfStillWaiting(waiter: id)
            }
            try? await Task.sleep(until: deadline, clock: .continuous)
            guard !Task.isCancelled else { return }
            self?.abandon(waiter: id, with: .poolTimeout(waited: .zero, lastConnectError: nil))
        }
        // Served already (between queueing and here)? Then the timer is not needed.
        let stillWaiting = state.withLock { state in
            guard state.machine.waiters.contains(where: { $0.id == id }) else { return false }
            state.timers[id] = timer
            return true
        }
        if !stillWaiting { timer.cancel() }
    }

    private func growIfStillWaiting(waiter id: UInt64) {
        if state.withLock({ $0.machine.growIfStillWaiting(id: id) }) {
            logger.debug("postgres pool growing for a caller that waited", ["waited_ms": .int(Int(configuration.poolGrowthDelay.wholeMilliseconds))])
            startConnectionAttempts()
        }
    }

    func close(_ connection: PostgresConnection) async {
        await connection.close()
        counters.closed.add(1, ordering: .relaxed)
        let complete = state.withLock { state in
            state.machine.closed()
            return state.machine.isShutdownComplete
        }
        if complete { finished.trigger() }
    }
}
