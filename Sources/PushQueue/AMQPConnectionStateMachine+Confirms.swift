extension AMQPConnectionStateMachine {
    // MARK: Publisher confirms

    /// Why a publish cannot be sent now, if it cannot.
    var publishRefusal: QueueError? {
        if let reason = status.blockedReason { return .brokerBlocked(reason: reason) }
        return nil
    }

    /// A publish was written to the channel; `waiter` gets its outcome.
    mutating func published(exchange: String, routingKey: String, messageID: String?, waiter: ConfirmWaiter,
                            now: ContinuousClock.Instant) {
        confirms.register(exchange: exchange, routingKey: routingKey, messageID: messageID, waiter: waiter, now: now)
    }

    /// `basic.ack` / `basic.nack`: the waiters it answers.
    mutating func confirmReceived(tag: UInt64, multiple: Bool, positive: Bool) -> [Resolution] {
        confirms.confirm(tag: tag, multiple: multiple, positive: positive)
    }

    /// `basic.return`; false if it matches no unconfirmed publish.
    mutating func returned(exchange: String, routingKey: String, messageID: String?, code: UInt16, text: String) -> Bool {
        confirms.markReturned(exchange: exchange, routingKey: routingKey, messageID: messageID, code: code, text: text)
    }

    /// Waiters whose confirm is overdue.
    mutating func expireConfirms(now: ContinuousClock.Instant) -> [Resolution] {
        confirms.expire(now: now)
    }
}
