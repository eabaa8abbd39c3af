import CRabbitMQ

extension RawConnection {
    // MARK: Data channel

    /// Sends one message. Returns once rabbitmq-c has written it to the socket; the broker's
    /// verdict arrives later as a confirm (and a return, if it was unroutable).
    func publish(_ request: PublishRequest) throws(QueueError) {
        let arena = CArena()
        let message = request.message
        var properties = amqp_basic_properties_t()
        var flags = UInt32(AMQP_BASIC_DELIVERY_MODE_FLAG)
        properties.delivery_mode = message.persistent ? 2 : 1
        if let contentType = message.contentType {
            flags |= UInt32(AMQP_BASIC_CONTENT_TYPE_FLAG)
            properties.content_type = arena.bytes(contentType)
        }
        if let messageID = message.messageID {
            flags |= UInt32(AMQP_BASIC_MESSAGE_ID_FLAG)
            properties.message_id = arena.bytes(messageID)
        }
        if !message.headers.isEmpty {
            flags |= UInt32(AMQP_BASIC_HEADERS_FLAG)
            properties.headers = arena.table(message.headers)
        }
        if let correlationID = message.correlationID {
            flags |= UInt32(AMQP_BASIC_CORRELATION_ID_FLAG)
            properties.correlation_id = arena.bytes(correlationID)
        }
        if let expiration = message.expiration {
            flags |= UInt32(AMQP_BASIC_EXPIRATION_FLAG)
            properties.expiration = arena.bytes(String(max(0, Topology.milliseconds(expiration))))
        }
        if let timestamp = message.timestamp {
            flags |= UInt32(AMQP_BASIC_TIMESTAMP_FLAG)
            properties.timestamp = timestamp
        }
        if let type = message.type {
            flags |= UInt32(AMQP_BASIC_TYPE_FLAG)
            properties.type = arena.bytes(type)
        }
        if let appID = message.appID {
            flags |= UInt32(AMQP_BASIC_APP_ID_FLAG)
            properties.app_id = arena.bytes(appID)
        }
        properties._flags = flags
        let exchange = arena.bytes(request.exchange)
        let routingKey = arena.bytes(request.routingKey)
        let status = message.body.withUnsafeBytes { body in
            amqp_basic_publish(state, Self.dataChannel, exchange, routingKey, request.mandatory ? 1 : 0, 0, &properties,
                               amqp_bytes_t(len: body.count, bytes: UnsafeMutableRawPointer(mutating: body.baseAddress)))
        }
        try check(status: status, "basic.publish")
    }

    func settle(_ deliveryTag: UInt64, _ action: SettleAction) throws(QueueError) {
        let status: Int32
        switch action {
        case .ack: status = amqp_basic_ack(state, Self.dataChannel, deliveryTag, 0)
        case .requeue: status = amqp_basic_nack(state, Self.dataChannel, deliveryTag, 0, 1)
        case .deadLetter: status = amqp_basic_nack(state, Self.dataChannel, deliveryTag, 0, 0)
        case .reject: status = amqp_basic_reject(state, Self.dataChannel, deliveryTag, 0)
        }
        try check(status: status, "basic.ack/nack/reject")
    }

    /// `basic.qos` then `basic.consume`: RabbitMQ applies a non-global prefetch to each
    /// consumer started after it on the channel, so every consumer gets its own limit.
    func consume(queue: String, consumerTag: String, prefetch: UInt16) throws(QueueError) {
        _ = amqp_basic_qos(state, Self.dataChannel, 0, prefetch, 0)
        try check(amqp_get_rpc_reply(state), "basic.qos", channel: Self.dataChannel)
        let arena = CArena()
        _ = amqp_basic_consume(state, Self.dataChannel, arena.bytes(queue), arena.bytes(consumerTag), 0, 0, 0,
                               amqp_table_t(num_entries: 0, entries: nil))
        try check(amqp_get_rpc_reply(state), "basic.consume of queue \"\(queue)\"", channel: Self.dataChannel)
    }

    /// `basic.cancel`, waiting for cancel-ok. Deliveries the broker sent before it are
    /// queued inside rabbitmq-c and come out of `nextEvent` afterwards.
    func cancel(consumerTag: String) throws(QueueError) {
        let arena = CArena()
        _ = amqp_basic_cancel(state, Self.dataChannel, arena.bytes(consumerTag))
        try check(amqp_get_rpc_reply(state), "basic.cancel", channel: Self.dataChannel)
    }

    // MARK: Admin channel

    func declare(_ exchange: ExchangeDeclaration, passive: Bool) throws(QueueError) {
        try ensureAdminChannel()
        let arena = CArena()
        _ = amqp_exchange_declare(state, Self.adminChannel, arena.bytes(exchange.name), arena.bytes(exchange.kind.rawValue),
                                  passive ? 1 : 0, exchange.durable ? 1 : 0, 0, 0, amqp_table_t(num_entries: 0, entries: nil))
        try checkDeclaration(amqp_get_rpc_reply(state), "exchange.declare \(exchange.name)")
    }

    /// Returns the queue's ready message count and consumer count.
    @discardableResult
    func declare(_ queue: QueueDeclaration, passive: Bool) throws(QueueError) -> QueueStatistics {
        try ensureAdminChannel()
        let arena = CArena()
        let ok = amqp_queue_declare(state, Self.adminChannel, arena.bytes(queue.name), passive ? 1 : 0, queue.durable ? 1 : 0,
                                    0, 0, passive ? amqp_table_t(num_entries: 0, entries: nil) : arena.table(queue.arguments))
        try checkDeclaration(amqp_get_rpc_reply(state), "queue.declare \(queue.name)")
        return QueueStatistics(messages: Int(ok?.pointee.message_count ?? 0), consumers: Int(ok?.pointee.consumer_count ?? 0))
    }

    func bind(_ binding: BindingDeclaration) throws(QueueError) {
        try ensureAdminChannel()
        let arena = CArena()
        _ = amqp_queue_bind(state, Self.adminChannel, arena.bytes(binding.queue), arena.bytes(binding.exchange),
                            arena.bytes(binding.routingKey), amqp_table_t(num_entries: 0, entries: nil))
        try checkDeclaration(amqp_get_rpc_reply(state), "queue.bind \(binding.queue) to \(binding.exchange)")
    }

    /// Passive declare: counts without changing anything; 404 if the queue does not exist.
    func inspect(queue: String) throws(QueueError) -> QueueStatistics {
        try declare(QueueDeclaration(name: queue, arguments: [:]), passive: true)
    }

    /// Returns how many messages were purged.
    func purge(queue: String) throws(QueueError) -> Int {
        try ensureAdminChannel()
        let arena = CArena()
        let ok = amqp_queue_purge(state, Self.adminChannel, arena.bytes(queue))
        try check(amqp_get_rpc_reply(state), "queue.purge \(queue)", channel: Self.adminChannel)
        return Int(ok?.pointee.message_count ?? 0)
    }

    /// Returns how many messages were deleted with the queue.
    @discardableResult
    func delete(queue: String) throws(QueueError) -> Int {
        try ensureAdminChannel()
        let arena = CArena()
        let ok = amqp_queue_delete(state, Self.adminChannel, arena.bytes(queue), 0, 0)
        try check(amqp_get_rpc_reply(state), "queue.delete \(queue)", channel: Self.adminChannel)
        return Int(ok?.pointee.message_count ?? 0)
    }

    func delete(exchange: String) throws(QueueError) {
        try ensureAdminChannel()
        let arena = CArena()
        _ = amqp_exchange_delete(state, Self.adminChannel, arena.bytes(exchange), 0)
        try check(amqp_get_rpc_reply(state), "exchange.delete \(exchange)", channel: Self.adminChannel)
    }

    /// A 406 on a declaration means the object exists with other settings: say so.
    private func checkDeclaration(_ reply: amqp_rpc_reply_t, _ operation: String) throws(QueueError) {
        do {
            try check(reply, operation, channel: Self.adminChannel)
        } catch {
            if case .channelClosedByBroker(406, let text) = error { throw .topologyMismatch(replyText: text) }
            throw error
        }
    }
}

/// A queue's counts as the broker reports them on a declare.
public struct QueueStatistics: Sendable, Hashable {
    /// Messages ready for delivery (not counting delivered, unacknowledged ones).
    public let messages: Int
    public let consumers: Int
}
