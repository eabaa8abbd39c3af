import CRabbitMQ
import Foundation

/// What the broker sent, copied out of rabbitmq-c's buffers.
enum InboundEvent {
    case delivery(InboundDelivery)
    case confirm(tag: UInt64, multiple: Bool, positive: Bool)
    case returned(exchange: String, routingKey: String, messageID: String?, replyCode: UInt16, replyText: String)
    case consumerCancelled(consumerTag: String)
    case blocked(reason: String)
    case unblocked
    /// Heartbeats and methods pushd does not act on.
    case ignored
}

struct InboundDelivery {
    let consumerTag: String
    let deliveryTag: UInt64
    let redelivered: Bool
    let exchange: String
    let routingKey: String
    let body: [UInt8]
    let properties: InboundProperties
}

struct InboundProperties {
    var headers: [String: HeaderValue] = [:]
    var messageID: String?
    var contentType: String?
    var correlationID: String?
    var timestamp: UInt64?
    var persistent = false

    init(_ properties: amqp_basic_properties_t) {
        let flags = properties._flags
        func has(_ flag: Int32) -> Bool { flags & UInt32(flag) != 0 }
        if has(AMQP_BASIC_HEADERS_FLAG) { headers = HeaderValue.decode(properties.headers) }
        if has(AMQP_BASIC_MESSAGE_ID_FLAG) { messageID = String(amqpBytes: properties.message_id) }
        if has(AMQP_BASIC_CONTENT_TYPE_FLAG) { contentType = String(amqpBytes: properties.content_type) }
        if has(AMQP_BASIC_CORRELATION_ID_FLAG) { correlationID = String(amqpBytes: properties.correlation_id) }
        if has(AMQP_BASIC_TIMESTAMP_FLAG) { timestamp = properties.timestamp }
        persistent = has(AMQP_BASIC_DELIVERY_MODE_FLAG) && properties.delivery_mode == 2
    }
}

extension RawConnection {
    /// Reads the next event the broker sent, or returns nil if none is complete yet.
    ///
    /// `wait: false` only takes what is already in the socket or rabbitmq-c's buffers. With
    /// `wait: true` it blocks for at most a millisecond, which is what makes rabbitmq-c send
    /// a heartbeat that is due and notice one that is overdue (it does neither outside its
    /// own calls, and not with a zero timeout).
    ///
    /// A `channel.close` or `connection.close` from the broker is answered and thrown.
    func nextEvent(wait: Bool) throws(QueueError) -> InboundEvent? {
        amqp_maybe_release_buffers(state)
        var envelope = amqp_envelope_t()
        var timeout = wait ? timeval(tv_sec: 0, tv_usec: 1000) : timeval(tv_sec: 0, tv_usec: 0)
        let reply = amqp_consume_message(state, &envelope, &timeout, 0)
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            defer { amqp_destroy_envelope(&envelope) }
            return .delivery(InboundDelivery(
                consumerTag: String(amqpBytes: envelope.consumer_tag),
                deliveryTag: envelope.delivery_tag,
                redelivered: envelope.redelivered != 0,
                exchange: String(amqpBytes: envelope.exchange),
                routingKey: String(amqpBytes: envelope.routing_key),
                body: [UInt8](amqpBytes: envelope.message.body),
                properties: InboundProperties(envelope.message.properties)))
        case AMQP_RESPONSE_LIBRARY_EXCEPTION where reply.library_error == AMQP_STATUS_TIMEOUT.rawValue:
            return nil
        case AMQP_RESPONSE_LIBRARY_EXCEPTION where reply.library_error == AMQP_STATUS_UNEXPECTED_STATE.rawValue:
            // Something other than a delivery: rabbitmq-c has queued the frame for us.
            return try nextFrame()
        default:
            try check(reply, "reading from the broker", channel: Self.dataChannel)
            return nil
        }
    }

    private func nextFrame() throws(QueueError) -> InboundEvent {
        var frame = amqp_frame_t()
        try check(status: amqp_simple_wait_frame(state, &frame), "reading a frame")
        guard frame.frame_type == AMQP_FRAME_METHOD else { return .ignored }
        let method = frame.payload.method
        let channel = frame.channel
        func decoded<T>(_ type: T.Type) -> T? {
            method.decoded.map { $0.assumingMemoryBound(to: T.self).pointee }
        }
        switch method.id {
        case AMQP_BASIC_ACK_METHOD:
            guard let ack = decoded(amqp_basic_ack_t.self), channel == Self.dataChannel else { return .ignored }
            return .confirm(tag: ack.delivery_tag, multiple: ack.multiple != 0, positive: true)
        case AMQP_BASIC_NACK_METHOD:
            guard let nack = decoded(amqp_basic_nack_t.self), channel == Self.dataChannel else { return .ignored }
            return .confirm(tag: nack.delivery_tag, multiple: nack.multiple != 0, positive: false)
        case AMQP_BASIC_RETURN_METHOD:
            guard let returned = decoded(amqp_basic_return_t.self) else { return .ignored }
            // Copy the method's fields before reading the content, which may reuse buffers.
            let exchange = String(amqpBytes: returned.exchange)
            let routingKey = String(amqpBytes: returned.routing_key)
            let replyText = String(amqpBytes: returned.reply_text)
            var message = amqp_message_t()
            try check(amqp_read_message(state, channel, &message, 0), "reading a returned message", channel: channel)
            defer { amqp_destroy_message(&message) }
            let properties = InboundProperties(message.properties)
            return .returned(exchange: exchange, routingKey: routingKey, messageID: properties.messageID,
                             replyCode: returned.reply_code, replyText: replyText)
        case AMQP_BASIC_CANCEL_METHOD:
            guard let cancel = decoded(amqp_basic_cancel_t.self) else { return .ignored }
            return .consumerCancelled(consumerTag: String(amqpBytes: cancel.consumer_tag))
        case AMQP_CONNECTION_BLOCKED_METHOD:
            return .blocked(reason: decoded(amqp_connection_blocked_t.self).map { String(amqpBytes: $0.reason) } ?? "")
        case AMQP_CONNECTION_UNBLOCKED_METHOD:
            return .unblocked
        case AMQP_CHANNEL_CLOSE_METHOD:
            let close = decoded(amqp_channel_close_t.self)
            acknowledgeChannelClose(channel)
            let error = QueueError.channelClosedByBroker(replyCode: close?.reply_code ?? 0,
                                                         replyText: close.map { String(amqpBytes: $0.reply_text) } ?? "")
            guard channel == Self.dataChannel else {
                adminChannelClosed()
                return .ignored
            }
            throw fail(error)
        case AMQP_CONNECTION_CLOSE_METHOD:
            let close = decoded(amqp_connection_close_t.self)
            acknowledgeConnectionClose()
            throw fail(.connectionClosedByBroker(replyCode: close?.reply_code ?? 0,
                                                 replyText: close.map { String(amqpBytes: $0.reply_text) } ?? ""))
        default:
            return .ignored
        }
    }

    /// Waits until the socket or `wakeDescriptor` is readable, at most `timeout`.
    /// Returns which of the two woke it.
    func waitForInput(wakeDescriptor: Int32, timeout: Duration) -> (socket: Bool, wakeup: Bool) {
        var descriptors = [
            pollfd(fd: socketDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        let milliseconds = Int32(clamping: max(0, Topology.milliseconds(timeout)))
        guard poll(&descriptors, 2, milliseconds) > 0 else { return (false, false) }
        // Errors and hang-ups count as input: the next read reports them properly.
        return (descriptors[0].revents != 0, descriptors[1].revents != 0)
    }
}
