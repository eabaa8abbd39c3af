import CRabbitMQ
import Foundation

extension RawConnection {
    /// Turns an RPC reply into success or a typed error. A server exception is answered
    /// with the close-ok the protocol requires. A closed admin channel only marks that
    /// channel for re-opening; anything else makes the connection unusable (`failure`).
    func check(_ reply: amqp_rpc_reply_t, _ operation: String, channel: amqp_channel_t) throws(QueueError) {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            return
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            switch reply.reply.id {
            case AMQP_CONNECTION_CLOSE_METHOD:
                let close = reply.reply.decoded.map { $0.assumingMemoryBound(to: amqp_connection_close_t.self).pointee }
                acknowledgeConnectionClose()
                throw fail(.connectionClosedByBroker(replyCode: close?.reply_code ?? 0,
                                                     replyText: close.map { String(amqpBytes: $0.reply_text) } ?? ""))
            case AMQP_CHANNEL_CLOSE_METHOD:
                let close = reply.reply.decoded.map { $0.assumingMemoryBound(to: amqp_channel_close_t.self).pointee }
                acknowledgeChannelClose(channel)
                let error = QueueError.channelClosedByBroker(replyCode: close?.reply_code ?? 0,
                                                             replyText: close.map { String(amqpBytes: $0.reply_text) } ?? "")
                guard channel == Self.adminChannel else { throw fail(error) }
                adminChannelClosed()
                throw error
            default:
                throw fail(.library(operation: operation, status: AMQP_STATUS_UNEXPECTED_STATE.rawValue,
                                    message: "unexpected server method 0x\(String(reply.reply.id, radix: 16))"))
            }
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            throw fail(Self.error(status: reply.library_error, operation: operation, heartbeat: heartbeatSeconds))
        default:
            throw fail(.connectionLost(reason: "\(operation): the broker closed the socket"))
        }
    }

    /// Checks a status code returned by a non-RPC call (publish, ack).
    func check(status: Int32, _ operation: String) throws(QueueError) {
        guard status != AMQP_STATUS_OK.rawValue else { return }
        throw fail(Self.error(status: status, operation: operation, heartbeat: heartbeatSeconds))
    }

    /// Records the connection as unusable and returns the error to throw.
    func fail(_ error: QueueError) -> QueueError {
        if failure == nil { markFailed(error) }
        return error
    }

    func acknowledgeConnectionClose() {
        var ok = amqp_connection_close_ok_t()
        _ = amqp_send_method(state, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok)
    }

    func acknowledgeChannelClose(_ channel: amqp_channel_t) {
        var ok = amqp_channel_close_ok_t()
        _ = amqp_send_method(state, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok)
    }

    static func error(status: Int32, operation: String, heartbeat: Int) -> QueueError {
        let reason = "\(operation): \(describe(status))\(systemErrorSuffix(status))"
        switch status {
        case AMQP_STATUS_HEARTBEAT_TIMEOUT.rawValue:
            return .connectionLost(reason: "no frame or heartbeat from the broker for \(2 * heartbeat) s")
        case AMQP_STATUS_TIMEOUT.rawValue:
            return .timedOut("\(operation): no reply from the broker in time; the connection is closed and will reconnect")
        case AMQP_STATUS_CONNECTION_CLOSED.rawValue, AMQP_STATUS_SOCKET_ERROR.rawValue, AMQP_STATUS_SOCKET_CLOSED.rawValue,
             AMQP_STATUS_TCP_ERROR.rawValue, AMQP_STATUS_SSL_ERROR.rawValue, AMQP_STATUS_BAD_AMQP_DATA.rawValue,
             AMQP_STATUS_UNEXPECTED_STATE.rawValue:
            return .connectionLost(reason: reason)
        default:
            return .library(operation: operation, status: status, message: describe(status))
        }
    }

    static func describe(_ status: Int32) -> String {
        guard let text = amqp_error_string2(status) else { return "status \(status)" }
        return String(cString: text)
    }

    /// errno's text for the statuses that come from a system call.
    static func systemErrorSuffix(_ status: Int32) -> String {
        guard status == AMQP_STATUS_SOCKET_ERROR.rawValue || status == AMQP_STATUS_TCP_ERROR.rawValue,
              errno != 0 else { return "" }
        return " (\(String(cString: strerror(errno))))"
    }
}
