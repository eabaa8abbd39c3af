extension AMQPConnection {
    /// Serves the connection until it fails or is closed; returns why it stopped.
    ///
    /// Each turn lets announced actor calls run first, sends what was posted to the mailbox
    /// (publishes, acks), then reads what the broker sent, and only blocks in `poll` when
    /// nobody is waiting. At least every `pollInterval` it calls rabbitmq-c with a short
    /// timeout so that heartbeats are sent and missing ones are detected even while the
    /// connection is busy, and fails publishes whose confirm is overdue.
    func serve() async -> QueueError {
        var lastHeartbeatService = ContinuousClock.now
        while true {
            // Other jobs of this actor first: announced callers, and waiters resumed by the
            // connect that just happened.
            await Task.yield()
            guard let raw else { return .notConnected(lastError: nil) }
            if closing && (confirms.waitingCount == 0 || ContinuousClock.now >= closeDeadline) { return .closed }
            processMailbox(raw)
            if let failure = raw.failure { return failure }
            let interval = pollInterval
            do {
                if raw.hasBufferedInput {
                    try readAvailable(from: raw)
                } else {
                    // Block only while nobody waits for this thread; otherwise just look,
                    // so that a steady stream of callers cannot keep confirms and deliveries
                    // from being read.
                    let mayBlock = wakeup.prepareToSleep { mailbox.hasItems }
                    let woke = raw.waitForInput(wakeDescriptor: wakeup.readDescriptor, timeout: mayBlock ? interval : .zero)
                    wakeup.awoke(pipeReadable: woke.wakeup)
                    if woke.socket { try readAvailable(from: raw) }
                }
                if ContinuousClock.now - lastHeartbeatService >= interval {
                    lastHeartbeatService = .now
                    if let event = try raw.nextEvent(wait: true) { try handle(event) }
                    resolve(confirms.expire())
                }
            } catch {
                return error
            }
        }
    }

    /// Handles every complete event already received, up to a bound that keeps callers from
    /// waiting behind a flood of deliveries.
    private func readAvailable(from raw: RawConnection) throws(QueueError) {
        for _ in 0..<256 {
            guard let event = try raw.nextEvent(wait: false) else { return }
            try handle(event)
            if wakeup.hasAnnounced || mailbox.hasItems { return }
        }
    }

    /// Handles events rabbitmq-c queued during a synchronous call (e.g. deliveries that
    /// arrived before a cancel-ok), so they reach their consumer before it is finished.
    func handleQueuedEvents() throws(QueueError) {
        guard let raw else { return }
        while raw.hasBufferedInput, let event = try raw.nextEvent(wait: false) {
            try handle(event)
        }
    }

    func handle(_ event: InboundEvent) throws(QueueError) {
        switch event {
        case .delivery(let delivery):
            try dispatch(delivery)
        case .confirm(let tag, let multiple, let positive):
            resolve(confirms.confirm(tag: tag, multiple: multiple, positive: positive))
        case .returned(let exchange, let routingKey, let messageID, let code, let text):
            if !confirms.markReturned(exchange: exchange, routingKey: routingKey, messageID: messageID, code: code, text: text) {
                logger.warning("amqp returned message matches no unconfirmed publish", [
                    "exchange": .string(exchange), "routing_key": .string(routingKey), "reply": .string("\(code) \(text)"),
                ])
            }
        case .consumerCancelled(let tag):
            guard let id = consumerIDsByTag[tag], let record = consumers[id] else { return }
            logger.warning("amqp consumer cancelled by the broker", ["queue": .string(record.queue), "consumer_tag": .string(tag)])
            finishConsumer(id, error: .consumerCancelledByBroker(queue: record.queue))
        case .blocked(let reason):
            blockedReason = reason
            updateStatus { $0.blockedReason = reason }
            logger.warning("amqp publishing blocked by the broker", ["reason": .string(reason)])
        case .unblocked:
            blockedReason = nil
            updateStatus { $0.blockedReason = nil }
            logger.info("amqp publishing unblocked")
        case .ignored:
            break
        }
    }

    func resolve(_ resolutions: [ConfirmTracker<UInt64>.Resolution]) {
        for (ticket, result) in resolutions {
            if let waiter = confirmWaiters.removeValue(forKey: ticket) {
                deliver(result, to: waiter)
            }
        }
    }

    func deliver(_ result: Result<Void, QueueError>, to waiter: ConfirmWaiter) {
        switch waiter {
        case .single(let continuation): continuation.resume(returning: result)
        case .batch(let batch, let index): batch.resolve(index, result)
        }
    }
}
