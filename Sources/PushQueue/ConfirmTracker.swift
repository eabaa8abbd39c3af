/// Publisher-confirm bookkeeping for one channel, as a pure state machine: the connection
/// feeds it what the broker says and resumes the waiters it hands back.
///
/// - Sequence numbers count publishes on the channel from 1 (`confirm.select` semantics).
/// - `basic.ack`/`basic.nack` may confirm many at once (`multiple`).
/// - `basic.return` carries no sequence number. The broker sends it before the confirm of the
///   same message, so it is attributed to the oldest unconfirmed publish with the same
///   exchange, routing key and message id: messages identical in those three are routed
///   identically, so attributing to the wrong one of them cannot change any outcome.
/// - Deadlines grow with the sequence number (one timeout for all), so expiry only ever
///   looks at the oldest entries.
struct ConfirmTracker<Waiter> {
    struct Entry {
        let exchange: String
        let routingKey: String
        let messageID: String?
        let deadline: ContinuousClock.Instant
        var waiter: Waiter?
        var returned: (code: UInt16, text: String)?
    }

    typealias Resolution = (waiter: Waiter, result: Result<Void, QueueError>)

    private var entries: [UInt64: Entry] = [:]
    /// The next publish gets this sequence number.
    private(set) var nextSequence: UInt64 = 1
    /// No entry has a smaller sequence number.
    private var oldest: UInt64 = 1
    /// Entries below this one have no waiter left (resolved or expired).
    private var expiryCursor: UInt64 = 1
    private let timeout: Duration

    init(timeout: Duration) {
        self.timeout = timeout
    }

    /// Publishes still waiting for the broker.
    var waitingCount: Int { entries.values.reduce(0) { $0 + ($1.waiter == nil ? 0 : 1) } }

    var isEmpty: Bool { entries.isEmpty }

    /// Records a publish just sent; returns its sequence number.
    @discardableResult
    mutating func register(exchange: String, routingKey: String, messageID: String?, waiter: Waiter,
                           now: ContinuousClock.Instant = .now) -> UInt64 {
        let sequence = nextSequence
        nextSequence += 1
        entries[sequence] = Entry(exchange: exchange, routingKey: routingKey, messageID: messageID,
                                  deadline: now + timeout, waiter: waiter, returned: nil)
        return sequence
    }

    /// A `basic.return`: the broker could not route one of the outstanding messages.
    /// Returns false if no outstanding publish matches (nothing to report it to).
    @discardableResult
    mutating func markReturned(exchange: String, routingKey: String, messageID: String?, code: UInt16, text: String) -> Bool {
        var sequence = oldest
        while sequence < nextSequence {
            if let entry = entries[sequence], entry.returned == nil, entry.exchange == exchange,
               entry.routingKey == routingKey, entry.messageID == messageID {
                entries[sequence]?.returned = (code, text)
                return true
            }
            sequence += 1
        }
        return false
    }

    /// `basic.ack` (positive) or `basic.nack` for `tag`, or for everything up to it.
    mutating func confirm(tag: UInt64, multiple: Bool, positive: Bool) -> [Resolution] {
        var resolved: [Resolution] = []
        let range: ClosedRange<UInt64> = multiple ? min(oldest, tag)...tag : tag...tag
        if multiple && tag >= oldest {
            resolved.reserveCapacity(Int(min(tag - oldest + 1, 4096)))
        }
        for sequence in range {
            guard let entry = entries.removeValue(forKey: sequence) else { continue }
            guard let waiter = entry.waiter else { continue }
            if let returned = entry.returned {
                resolved.append((waiter, .failure(.unroutable(exchange: entry.exchange, routingKey: entry.routingKey,
                                                              replyCode: returned.code, replyText: returned.text))))
            } else if positive {
                resolved.append((waiter, .success(())))
            } else {
                resolved.append((waiter, .failure(.rejectedByBroker(exchange: entry.exchange, routingKey: entry.routingKey))))
            }
        }
        advanceOldest()
        return resolved
    }

    /// Fails the waiters whose confirm is overdue. Their entries stay until the broker's
    /// answer arrives, so a late confirm is recognised and ignored.
    mutating func expire(now: ContinuousClock.Instant = .now) -> [Resolution] {
        var resolved: [Resolution] = []
        expiryCursor = max(expiryCursor, oldest)
        while expiryCursor < nextSequence {
            guard let entry = entries[expiryCursor] else {
                expiryCursor += 1
                continue
            }
            guard entry.deadline <= now else { break }
            if let waiter = entry.waiter {
                resolved.append((waiter, .failure(.confirmTimedOut(milliseconds: Topology.milliseconds(timeout)))))
                entries[expiryCursor]?.waiter = nil
            }
            expiryCursor += 1
        }
        return resolved
    }

    /// The channel is gone: nothing outstanding will ever be confirmed. Fails every waiter
    /// with `error` and starts over at sequence number 1 for the next channel.
    mutating func failAll(_ error: QueueError) -> [Resolution] {
        let resolved = entries.sorted { $0.key < $1.key }.compactMap { _, entry -> Resolution? in
            entry.waiter.map { ($0, .failure(error)) }
        }
        entries.removeAll()
        nextSequence = 1
        oldest = 1
        expiryCursor = 1
        return resolved
    }

    private mutating func advanceOldest() {
        if entries.isEmpty {
            oldest = nextSequence
            return
        }
        while oldest < nextSequence, entries[oldest] == nil { oldest += 1 }
    }
}
