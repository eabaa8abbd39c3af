extension ConnectionWorker {
    /// Carries out the requests posted since the last turn, in order.
    func handleCommands() {
        guard mailbox.hasCommands else { return }
        for command in mailbox.takeCommands() {
            guard !machine.isFinished else {
                command.refuse(machine.terminalError ?? .closed)
                continue
            }
            switch command {
            case .start:
                if let connect = machine.start() {
                    logger.info("amqp connection starting")
                    perform(connect)
                }
            case .consume(let queue, let prefetch, let consumerTag, let reply):
                reply.resume(returning: consume(queue: queue, prefetch: prefetch, consumerTag: consumerTag))
            case .cancelConsumer(let id, let done):
                stopConsumer(id)
                done?.resume()
            case .awaitConnection(let id, let continuation):
                if let result = machine.waitForConnection(id: id, continuation) {
                    continuation.resume(returning: result)
                }
            case .connectWaiterExpired(let id, let timeout):
                guard let waiter = machine.connectWaiterExpired(id: id) else { continue }
                let status = machine.status
                waiter.resume(returning: .failure(.timedOut(
                    "no AMQP connection within \(timeout) (state \(status.state.rawValue), last error: \(status.lastError?.description ?? "none"))")))
            case .admin(let body):
                body(adminAccess())
            case .close:
                requestClose()
            }
        }
    }

    /// Starts a consumer now if connected (the queue must exist), else registers it to
    /// start on the next connect.
    private func consume(queue: String, prefetch: UInt16, consumerTag: String?) -> Result<ConsumerHandle, QueueError> {
        let plan: (spec: Machine.ConsumerSpec, startNow: Bool)
        switch machine.planConsumer(queue: queue, prefetch: prefetch, consumerTag: consumerTag,
                                    connectionName: configuration.connectionName) {
        case .failure(let error): return .failure(error)
        case .success(let planned): plan = planned
        }
        let spec = plan.spec
        var active = false
        if plan.startNow, let raw, raw.failure == nil {
            do {
                // A missing queue closes only the admin channel here, not the one carrying
                // every other consumer's deliveries.
                _ = try raw.inspect(queue: queue)
                try raw.consume(queue: queue, consumerTag: spec.tag, prefetch: prefetch)
                active = true
            } catch {
                return .failure(error)
            }
        }
        let (stream, continuation) = AsyncThrowingStream<QueueMessage, any Error>.makeStream()
        // The sequence ended: dropped, its task cancelled, or finished here. Stop the
        // broker's deliveries to it (nothing happens if it is already stopped).
        continuation.onTermination = { [mailbox] _ in
            mailbox.post(.cancelConsumer(id: spec.id, done: nil))
        }
        machine.addConsumer(spec, consumer: continuation, active: active)
        logger.info("amqp consuming", ["queue": .string(queue), "consumer_tag": .string(spec.tag), "prefetch": .int(Int(prefetch))])
        return .success(ConsumerHandle(id: spec.id, tag: spec.tag, stream: stream))
    }

    /// `basic.cancel`, then hands the consumer every delivery that arrived before the
    /// broker's cancel-ok, then ends its sequence. The caller can still settle those.
    func stopConsumer(_ id: UInt64) {
        guard let record = machine.consumers[id] else { return }
        if record.active, let raw, raw.failure == nil {
            do {
                try raw.cancel(consumerTag: record.tag)
                try handleQueuedEvents(raw)
            } catch {
                // The connection failed; the next turn notices and reconnects without it.
                logger.warning("amqp consumer cancel failed", ["queue": .string(record.queue), "error": .string(error.description)])
            }
        }
        machine.removeConsumer(id)?.finish()
    }

    /// The open connection for an administrative request, or why there is none.
    private func adminAccess() -> Result<RawConnection, QueueError> {
        if let refusal = machine.refusal { return .failure(refusal) }
        guard let raw, raw.failure == nil else { return .failure(.notConnected(lastError: machine.status.lastError?.description)) }
        return .success(raw)
    }
}
