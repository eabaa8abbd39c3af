import PushRuntime

extension ConnectionPool: Service {
    public var name: String { "postgres-pool" }

    /// Runs until shutdown is asked for, then closes every connection. Started first and
    /// stopped last by a `ServiceGroup`, so consumers drain before the database goes.
    public func run(shutdown: ShutdownSignal) async throws {
        await shutdown.wait()
        await self.shutdown()
    }

    /// Fails waiting callers with `poolClosed`, closes idle connections now and leased ones
    /// as they come back, and returns when every connection is closed (or the calling task
    /// is cancelled).
    public func shutdown() async {
        let (toClose, toFail, tasks) = state.withLock { state in
            let (close, fail) = state.machine.shutdown()
            let tasks = Array(state.timers.values) + Array(state.connectTasks.values)
            state.timers.removeAll()
            return (close, fail, tasks)
        }
        tasks.forEach { $0.cancel() }
        for waiter in toFail { waiter.continuation.resume(returning: .failure(.poolClosed)) }
        for connection in toClose { await close(connection) }
        signalIfShutdownComplete()
        await finished.wait()
        logger.debug("postgres pool shut down")
    }
}
