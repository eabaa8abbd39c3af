import PushQueue

/// Consumes in the background and lets a test wait, with a deadline, for what arrives.
/// Each message is stamped with the time it was yielded.
actor MessageCollector {
    struct Received: Sendable {
        let message: QueueMessage
        let at: ContinuousClock.Instant
        var text: String { String(decoding: message.body, as: UTF8.self) }
    }

    struct Timeout: Error, CustomStringConvertible {
        let expected: Int
        let received: [String]
        let within: Duration
        var description: String { "expected \(expected) messages within \(within), got \(received.count): \(received.prefix(20))" }
    }

    private(set) var received: [Received] = []
    private(set) var endError: (any Error)?
    private(set) var ended = false
    private var waiters: [Int: (count: Int, continuation: CheckedContinuation<Bool, Never>)] = [:]
    private var conditionWaiters: [Int: (condition: @Sendable ([Received]) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]
    private var nextWaiter = 0
    private var task: Task<Void, Never>?

    /// `autoAck` acknowledges each message right after recording it.
    init(_ consumer: QueueConsumer, autoAck: Bool) async {
        task = Task { [consumer] in
            do {
                for try await message in consumer {
                    self.record(message)
                    if autoAck { await message.ack() }
                }
                self.end(nil)
            } catch {
                self.end(error)
            }
        }
    }

    private func record(_ message: QueueMessage) {
        received.append(Received(message: message, at: .now))
        resumeSatisfied()
    }

    private func end(_ error: (any Error)?) {
        ended = true
        endError = error
        let all = waiters
        waiters.removeAll()
        for waiter in all.values { waiter.continuation.resume(returning: received.count >= waiter.count) }
        let conditions = conditionWaiters
        conditionWaiters.removeAll()
        for waiter in conditions.values { waiter.continuation.resume(returning: waiter.condition(received)) }
    }

    private func resumeSatisfied() {
        for (id, waiter) in waiters where received.count >= waiter.count {
            waiters.removeValue(forKey: id)
            waiter.continuation.resume(returning: true)
        }
        for (id, waiter) in conditionWaiters where waiter.condition(received) {
            conditionWaiters.removeValue(forKey: id)
            waiter.continuation.resume(returning: true)
        }
    }

    /// Waits until what has arrived satisfies `condition` (checked on every arrival); throws
    /// `Timeout` if it does not within `timeout`.
    func waitUntil(within timeout: Duration, _ condition: @escaping @Sendable ([Received]) -> Bool) async throws {
        nextWaiter += 1
        let id = nextWaiter
        let timer = Task {
            do { try await Task.sleep(for: timeout) } catch { return }
            self.conditionWaiters.removeValue(forKey: id)?.continuation.resume(returning: false)
        }
        let satisfied = await withCheckedContinuation { continuation in
            if condition(received) {
                continuation.resume(returning: true)
            } else {
                conditionWaiters[id] = (condition, continuation)
            }
        }
        timer.cancel()
        guard satisfied else { throw Timeout(expected: -1, received: received.suffix(20).map(\.text), within: timeout) }
    }

    /// Returns the first `count` messages once they have arrived; throws `Timeout` if they
    /// have not after `timeout`, or if the consumer ended first.
    @discardableResult
    func waitFor(_ count: Int, within timeout: Duration) async throws -> [Received] {
        if received.count < count && !ended {
            nextWaiter += 1
            let id = nextWaiter
            let timer = Task {
                do { try await Task.sleep(for: timeout) } catch { return }
                self.expire(id)
            }
            _ = await withCheckedContinuation { continuation in
                // Checked again here: messages may have arrived while this call was queued.
                if received.count >= count || ended {
                    continuation.resume(returning: true)
                } else {
                    waiters[id] = (count, continuation)
                }
            }
            timer.cancel()
        }
        guard received.count >= count else {
            throw Timeout(expected: count, received: received.map(\.text), within: timeout)
        }
        return Array(received.prefix(count))
    }

    private func expire(_ id: Int) {
        waiters.removeValue(forKey: id)?.continuation.resume(returning: false)
    }

    /// Waits for the consumer's sequence to end; returns the error it ended with.
    func waitForEnd(within timeout: Duration) async throws -> (any Error)? {
        if !ended {
            nextWaiter += 1
            let id = nextWaiter
            let timer = Task {
                do { try await Task.sleep(for: timeout) } catch { return }
                self.expire(id)
            }
            // A count nothing reaches: only the end of the sequence or the timer resumes it.
            _ = await withCheckedContinuation { continuation in
                if ended {
                    continuation.resume(returning: true)
                } else {
                    waiters[id] = (Int.max, continuation)
                }
            }
            timer.cancel()
        }
        guard ended else { throw Timeout(expected: -1, received: received.map(\.text), within: timeout) }
        return endError
    }

    func stop() {
        task?.cancel()
    }
}
