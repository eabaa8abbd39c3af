extension AMQPConnectionStateMachine {
    // MARK: Waiting for the connection

    /// A caller waits for the connection: the answer now if there is one, else nil (the
    /// waiter is kept until connected, given up, closed, or `connectWaiterExpired`).
    mutating func waitForConnection(id: UInt64, _ waiter: Waiter) -> Result<Void, QueueError>? {
        switch phase {
        case .connected, .closing:
            return .success(())
        case .finished:
            return .failure(terminalError ?? .closed)
        case .idle, .connecting, .reconnecting:
            connectWaiters[id] = waiter
            return nil
        }
    }

    /// The waiter's timeout passed; returns it if it still waits.
    mutating func connectWaiterExpired(id: UInt64) -> Waiter? {
        connectWaiters.removeValue(forKey: id)
    }

    mutating func takeConnectWaiters() -> [Waiter] {
        defer { connectWaiters.removeAll() }
        return connectWaiters.keys.sorted().compactMap { connectWaiters[$0] }
    }
}
