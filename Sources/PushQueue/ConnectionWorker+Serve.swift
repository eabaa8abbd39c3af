extension ConnectionWorker {
    /// How long the thread may block in `poll`: short enough that rabbitmq-c sends our
    /// heartbeats on time and notices missing ones within a fraction of the interval.
    var pollInterval: Duration {
        let heartbeat = Duration.seconds(raw?.heartbeatSeconds ?? 0)
        guard heartbeat > .zero else { return .seconds(1) }
        return max(.milliseconds(10), min(.seconds(1), heartbeat / 4))
    }

    /// One turn on an open connection: send what was posted (publishes, acks), then read
    /// what the broker sent, and only block in `poll` when nobody is waiting. At least every
    /// `pollInterval` it calls rabbitmq-c with a short timeout so that heartbeats are sent
    /// and missing ones are detected even while the connection is busy, and fails publishes
    /// whose confirm is overdue.
    func serveTurn(_ raw: RawConnection) {
        processMailbox(raw)
        if let failure = raw.failure {
            connectionLost(failure)
            return
        }
        let interval = pollInterval
        do throws(QueueError) {
            if raw.hasBufferedInput {
                try readAvailable(from: raw)
            } else {
                // Block only while nobody waits for this thread; otherwise just look, so
                // that a steady stream of callers cannot keep confirms and deliveries from
                // being read.
                let mayBlock = mailbox.wakeup.prepareToSleep { mailbox.hasWork }
                let woke = raw.waitForInput(wakeDescriptor: mailbox.wakeup.readDescriptor, timeout: mayBlock ? interval : .zero)
                mailbox.wakeup.awoke(pipeReadable: woke.wakeup)
                if woke.socket { try readAvailable(from: raw) }
            }
            if ContinuousClock.now - lastHeartbeatService >= interval {
                lastHeartbeatService = .now
                if let event = try raw.nextEvent(wait: true) { try handle(event, on: raw) }
                resolve(machine.expireConfirms(now: .now))
            }
        } catch {
            connectionLost(error)
        }
    }

    /// Handles every complete event already received, up to a bound that keeps callers from
    /// waiting behind a flood of deliveries.
    private func readAvailable(from raw: RawConnection) throws(QueueError) {
        for _ in 0..<256 {
            guard let event = try raw.nextEvent(wait: false) else { return }
            try handle(event, on: raw)
            if mailbox.hasWork { return }
        }
    }

    /// Handles events rabbitmq-c queued during a synchronous call (e.g. deliveries that
    /// arrived before a cancel-ok), so they reach their consumer before it is finished.
    func handleQueuedEvents(_ raw: RawConnection) throws(QueueError) {
        while raw.hasBufferedInput, let event = try raw.nextEvent(wait: false) {
            try handle(event, on: raw)
        }
    }

    private func handle(_ event: InboundEvent, on raw: RawConnection) throws(QueueError) {
        switch event {
        case .delivery(let delivery):
            try dispatch(delivery, on: raw)
        case .confirm(let tag, let multiple, let positive):
            resolve(machine.confirmReceived(tag: tag, multiple: multiple, positive: positive))
        case .returned(let exchange, let routingKey, let messageID, let code, let text):
            if !machine.returned(exchange: exchange, routingKey: routingKey, messageID: messageID, code: code, text: text) {
                logger.warning("amqp returned message matches no unconfirmed publish", [
                    "exchange": .string(exchange), "routing_key": .string(routingKey), "reply": .string("\(code) \(text)"),
                ])
            }
        case .consumerCancelled(let tag):
            guard let record = machine.consumerCancelledByBroker(tag: tag) else { return }
            logger.warning("amqp consumer cancelled by the broker", ["queue": .string(record.queue), "consumer_tag": .string(tag)])
            record.consumer.finish(throwing: QueueError.consumerCancelledByBroker(queue: record.queue))
        case .blocked(let reason):
            machine.blocked(reason)
            publishStatus()
            logger.warning("amqp publishing blocked by the broker", ["reason": .string(reason)])
        case .unblocked:
            machine.blocked(nil)
            publishStatus()
            logger.info("amqp publishing unblocked")
        case .ignored:
            break
        }
    }

    /// Hands a delivery to its consumer. One nobody wants any more goes straight back to the
    /// queue (a requeue, not a dead letter).
    private func dispatch(_ delivery: InboundDelivery, on raw: RawConnection) throws(QueueError) {
        guard let record = machine.consumer(tag: delivery.consumerTag) else {
            try raw.settle(delivery.deliveryTag, .requeue)
            return
        }
        let ledger = shared.ledger
        ledger.delivered(delivery.deliveryTag)
        let properties = delivery.properties
        let message = QueueMessage(
            body: delivery.body, headers: properties.headers, messageID: properties.messageID,
            contentType: properties.contentType, correlationID: properties.correlationID, timestamp: properties.timestamp,
            persistent: properties.persistent, exchange: delivery.exchange, routingKey: delivery.routingKey,
            queue: record.queue, deliveryTag: delivery.deliveryTag, redelivered: delivery.redelivered,
            origin: DeliveryOrigin(connection: shared, generation: ledger.generation))
        if case .terminated = record.consumer.yield(message) {
            _ = ledger.settle(delivery.deliveryTag, generation: ledger.generation)
            try raw.settle(delivery.deliveryTag, .requeue)
        }
    }

    /// Sends what callers posted: publishes (answered when their confirms arrive) and
    /// settlements.
    private func processMailbox(_ raw: RawConnection) {
        for item in mailbox.takeItems() {
            switch item {
            case .publish(let request, let continuation):
                if let error = send(request, on: raw, waiter: .single(continuation)) {
                    continuation.resume(returning: .failure(error))
                }
            case .batch(let requests, let continuation):
                let batch = BatchConfirmation(count: requests.count, continuation: continuation)
                for (index, request) in requests.enumerated() {
                    if let error = send(request, on: raw, waiter: .batch(batch, index: index)) {
                        batch.resolve(index, .failure(error))
                    }
                }
            case .settle(let tag, let generation, let action):
                // A settlement from before a reconnect (it slipped in while the mailbox was
                // reopened) would name another message on this channel.
                guard raw.failure == nil, generation == shared.ledger.generation else { continue }
                do {
                    try raw.settle(tag, action)
                } catch {
                    // The connection died; the broker redelivers. The turn notices `failure`.
                }
            }
        }
    }

    /// Sends the message and records it as awaiting its confirm; returns why it was not
    /// sent, if it was not. A send that fails midway kills the connection (its frames may be
    /// half written); the turn then notices and reconnects.
    private func send(_ request: PublishRequest, on raw: RawConnection, waiter: ConfirmWaiter) -> QueueError? {
        if let failure = raw.failure { return .confirmationUnknown(reason: failure.description) }
        if let refusal = machine.publishRefusal { return refusal }
        do {
            try raw.publish(request)
        } catch {
            return .confirmationUnknown(reason: error.description)
        }
        machine.published(exchange: request.exchange, routingKey: request.routingKey, messageID: request.message.messageID,
                          waiter: waiter, now: .now)
        return nil
    }
}
