extension AMQPConnection {
    /// Starts connecting in the background and returns at once; reconnects for as long as the
    /// connection is open. Calling it again does nothing.
    public nonisolated func start() async {
        wakeup.announce()
        await performStart()
    }

    private func performStart() {
        wakeup.arrived()
        guard lifecycle == nil, !closing else { return }
        logger.info("amqp connection starting")
        lifecycle = Task { await self.maintainConnection() }
    }

    /// Connect, serve, and after any failure tear down, wait out the backoff and connect
    /// again — until `close()`. A first connection that fails for a reason retrying cannot
    /// fix (credentials, TLS, mismatching topology) ends it with that error instead.
    private func maintainConnection() async {
        var attempt = 0
        while !closing {
            updateStatus { $0.state = .connecting }
            let failure: QueueError
            do {
                try establish()
                attempt = 0
                failure = await serve()
            } catch {
                failure = error
            }
            if closing { break }
            tearDown(after: failure)
            if !hasConnected && !failure.isRetryable {
                logger.error("amqp connection failed permanently", ["error": .string(failure.description)])
                terminalError = failure
                for item in mailbox.shut(failure) { item.refuse(failure) }
                updateStatus { $0.state = .failed }
                resumeConnectWaiters(.failure(failure))
                break
            }
            let delay = configuration.reconnectBackoff.delay(attempt: attempt)
            attempt += 1
            updateStatus {
                $0.state = .reconnecting
                $0.failedAttempts += 1
            }
            logger.warning("amqp connection failed; reconnecting", [
                "error": .string(failure.description), "attempt": .int(attempt),
                "delay_ms": .int(Int(Topology.milliseconds(delay))),
            ])
            do {
                try await Task.sleep(for: delay)
            } catch {
                break  // close() cancels the wait.
            }
        }
        finishLifecycle()
    }

    /// Opens a connection, declares the topology and resumes the consumers: everything a
    /// fresh connection needs before it is handed to callers.
    private func establish() throws(QueueError) {
        let connection = try RawConnection(configuration: configuration)
        if let topology {
            try declare(topology, mode: topologyMode, on: connection)
        }
        let generation = ledger.startGeneration()
        for id in consumers.keys.sorted() {
            guard let record = consumers[id] else { continue }
            do {
                try connection.consume(queue: record.queue, consumerTag: record.tag, prefetch: record.prefetch)
                consumers[id]?.active = true
            } catch {
                if case .channelClosedByBroker(404, _) = error {
                    // The queue is gone: this consumer cannot resume, the others can.
                    finishConsumer(id, error: error)
                }
                ledger.endGeneration()
                throw error
            }
        }
        raw = connection
        mailbox.open()
        let reconnected = hasConnected
        hasConnected = true
        updateStatus {
            $0.state = .connected
            $0.failedAttempts = 0
            $0.connectedSince = .now
            $0.blockedReason = nil
            if reconnected { $0.reconnects += 1 }
        }
        logger.info(reconnected ? "amqp reconnected" : "amqp connected", [
            "generation": .int(Int(generation)), "heartbeat_s": .int(connection.heartbeatSeconds),
            "consumers": .int(consumers.count),
        ])
        resumeConnectWaiters(.success(()))
    }

    /// Drops the dead connection: outstanding confirms fail (retryable, outcome unknown),
    /// its deliveries become stale, its consumers wait for the next connection.
    func tearDown(after failure: QueueError, finalState: ConnectionStatus.State? = nil) {
        // The status first, so that whoever is woken below already sees the connection down.
        updateStatus {
            if let finalState {
                $0.state = finalState
            } else {
                $0.state = .reconnecting
                $0.lastError = failure
            }
            $0.connectedSince = nil
            $0.blockedReason = nil
        }
        // Refuse new work, then answer what was posted and never sent.
        let refusal = closing ? QueueError.closed : terminalError ?? .notConnected(lastError: failure.description)
        for item in mailbox.shut(refusal) { item.refuse(refusal) }
        resolve(confirms.failAll(.confirmationUnknown(reason: failure.description)))
        ledger.endGeneration()
        for id in consumers.keys { consumers[id]?.active = false }
        raw = nil
        blockedReason = nil
    }

    private func finishLifecycle() {
        if let raw, raw.failure == nil {
            raw.close(timeout: .seconds(2))
        }
        tearDown(after: terminalError ?? .closed, finalState: terminalError == nil ? .closed : .failed)
        for id in consumers.keys.sorted() { finishConsumer(id, error: terminalError) }
        lifecycleFinished = true
        resumeConnectWaiters(.failure(terminalError ?? .closed))
        let waiters = terminationWaiters
        terminationWaiters.removeAll()
        for waiter in waiters { waiter.resume(returning: terminalError) }
        logger.info("amqp connection finished", ["error": .string(terminalError?.description ?? "none")])
    }

    // MARK: Waiting for the connection

    /// Returns once connected (immediately if already), or throws: `.timedOut` after
    /// `timeout`, the permanent error if the connection gave up, `.closed` after `close()`.
    public nonisolated func waitUntilConnected(timeout: Duration) async throws(QueueError) {
        let id = nextWaiterID()
        let timer = Task {
            do { try await Task.sleep(for: timeout) } catch { return }
            self.wakeup.announce()
            await self.expireConnectWaiter(id, after: timeout)
        }
        defer { timer.cancel() }
        wakeup.announce()
        try await awaitConnection(id).get()
    }

    private func awaitConnection(_ id: UInt64) async -> Result<Void, QueueError> {
        wakeup.arrived()
        // Decided inside the continuation's body, which runs on this actor: the runtime may
        // hop through the executor's queue on the way in (see `announcedSuspension`), so
        // anything checked before could be stale by then.
        announcedSuspension()
        return await withCheckedContinuation { continuation in
            wakeup.arrived()
            if expiredConnectWaiters.remove(id) != nil {
                continuation.resume(returning: .failure(.timedOut("waiting for the AMQP connection")))
            } else if let result = connectionOutcome() {
                continuation.resume(returning: result)
            } else {
                connectWaiters[id] = continuation
            }
        }
    }

    /// Success if connected, the reason if it never will be, nil while it may still be.
    private func connectionOutcome() -> Result<Void, QueueError>? {
        if let raw, raw.failure == nil { return .success(()) }
        if let terminalError { return .failure(terminalError) }
        if closing || lifecycleFinished { return .failure(.closed) }
        return nil
    }

    private func expireConnectWaiter(_ id: UInt64, after timeout: Duration) {
        wakeup.arrived()
        guard let waiter = connectWaiters.removeValue(forKey: id) else {
            // Not registered yet (the connection thread was busy): refuse it when it comes.
            expiredConnectWaiters.insert(id)
            return
        }
        let state = status.state.rawValue
        let lastError = status.lastError?.description ?? "none"
        waiter.resume(returning: .failure(.timedOut("no AMQP connection within \(timeout) (state \(state), last error: \(lastError))")))
    }

    private func resumeConnectWaiters(_ result: Result<Void, QueueError>) {
        let waiters = connectWaiters
        connectWaiters.removeAll()
        for waiter in waiters.values { waiter.resume(returning: result) }
    }

    // MARK: Closing

    /// Stops consumers (their sequences end after what was already delivered), waits up to
    /// `configuration.closeGracePeriod` for outstanding publisher confirms, closes the
    /// connection with the AMQP handshake and stops reconnecting. Settling messages after
    /// this returns `.stale`.
    public nonisolated func close() async {
        wakeup.announce()
        await performClose()
    }

    private func performClose() async {
        wakeup.arrived()
        if !closing {
            closing = true
            closeDeadline = .now + configuration.closeGracePeriod
            for item in mailbox.shut(.closed) { item.refuse(.closed) }
            logger.info("amqp connection closing", ["unconfirmed": .int(confirms.waitingCount)])
            for id in consumers.keys.sorted() { stopConsumer(id) }
            lifecycle?.cancel()
        }
        if let lifecycle {
            await lifecycle.value
        } else if !lifecycleFinished {
            finishLifecycle()
        }
    }

    /// Returns when the connection has stopped for good: nil after `close()`, the error if
    /// it gave up.
    nonisolated func terminated() async -> QueueError? {
        wakeup.announce()
        return await awaitTermination()
    }

    private func awaitTermination() async -> QueueError? {
        wakeup.arrived()
        announcedSuspension()
        return await withCheckedContinuation { continuation in
            wakeup.arrived()
            if lifecycleFinished {
                continuation.resume(returning: terminalError)
            } else {
                terminationWaiters.append(continuation)
            }
        }
    }

    /// Kills the socket as a network failure would, for recovery tests.
    func abortSocketForTesting() {
        raw?.abortSocket()
    }
}
