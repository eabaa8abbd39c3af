import PushQueue

extension WorkerService {
    /// How a worker shares itself between the two lanes.
    struct Lanes: Sendable {
        /// Urgent jobs held at once.
        var urgentPrefetch: UInt16
        /// Bulk jobs held at once, apart from the urgent ones: a bulk backlog fills at most
        /// these slots, so an urgent job is taken as soon as it arrives.
        var bulkPrefetch: UInt16
        /// Jobs with more recipients are split into chunks of this many (`WorkerService+Split`).
        var chunkSize: Int
    }

    /// One consumer per lane on the consuming connection, each with its own prefetch (the
    /// broker enforces each separately), urgent first.
    func consumeLanes() async throws(QueueError) -> [QueueConsumer] {
        var consumers: [QueueConsumer] = []
        for (queue, prefetch) in [(topology.jobsQueue, lanes.urgentPrefetch), (topology.bulkJobsQueue, lanes.bulkPrefetch)] {
            do {
                consumers.append(try await consumerConnection.consume(queue: queue, prefetch: prefetch))
            } catch {
                for consumer in consumers { await consumer.cancel() }
                throw error
            }
            logger.info("worker consuming", ["queue": .string(queue), "prefetch": .int(Int(prefetch))])
        }
        return consumers
    }

    /// Handles every message of every consumer, each lane read by its own task so neither
    /// waits for the other; returns once all consumers ended and every job is settled, with
    /// the first consumer failure if any. A lane that fails (its queue deleted, the
    /// connection given up) stops the others too, as a single consumer's failure stopped the
    /// worker before lanes: the process exits and is restarted rather than half-working.
    func handleAll(from consumers: [QueueConsumer]) async -> (any Error)? {
        await withTaskGroup(of: (any Error)?.self) { lanes in
            for consumer in consumers {
                lanes.addTask {
                    let failure: (any Error)? = await withTaskGroup(of: Void.self) { jobs in
                        do {
                            for try await message in consumer {
                                jobs.addTask { await self.handle(message) }
                            }
                        } catch {
                            await jobs.waitForAll()
                            return error
                        }
                        await jobs.waitForAll()
                        return nil
                    }
                    if failure != nil {
                        for other in consumers { await other.cancel() }
                    }
                    return failure
                }
            }
            var first: (any Error)?
            for await failure in lanes where first == nil { first = failure }
            return first
        }
    }
}
