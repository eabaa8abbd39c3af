import PushRuntime

extension AMQPConnection: Service {
    public var name: String { "amqp:\(configuration.connectionName)" }

    /// Connects and keeps the connection up until `shutdown`, then closes it gracefully.
    /// Throws if the connection gives up (a first connect that cannot succeed).
    public func run(shutdown: ShutdownSignal) async throws {
        await start()
        let failure: QueueError? = await withTaskGroup(of: QueueError?.self) { group in
            group.addTask {
                await shutdown.wait()
                await self.close()
                return nil
            }
            group.addTask { await self.terminated() }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let failure { throw failure }
    }
}
