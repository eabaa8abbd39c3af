import PushModel
import PushQueue
import PushRuntime

extension WorkerService {
    /// A job with more recipients than the chunk size is not delivered here: it is split
    /// into chunk jobs on the worker-only chunks queue (consumed like the bulk lane), which
    /// every worker then takes a share of. The
    /// original is acked only once the broker confirmed every chunk; otherwise it goes back
    /// to the queue, and the next worker splits it again into the same chunk ids with the
    /// original's collapse id, so a chunk published twice replaces, not duplicates, the
    /// notification on the phone.
    func split(_ accepted: AcceptedJob, _ message: QueueMessage, shutdown: ShutdownSignal) async {
        let job = accepted.job
        let chunks = accepted.document.chunks(chunkSize: lanes.chunkSize)
        // The original's first-attempt time travels as the chunks' timestamp (TTL counts from it).
        let timestamp = UInt64(max(0, accepted.firstAttemptAt.timeIntervalSince1970))
        let requests = chunks.map { chunk in
            var outgoing = OutgoingMessage(body: chunk.json, contentType: "application/json", messageID: chunk.jobID)
            outgoing.timestamp = timestamp
            return PublishRequest(exchange: topology.retryExchange, routingKey: Topology.chunkRoutingKey, message: outgoing)
        }
        let log = logger.with(["job_id": .string(job.jobID), "chunks": .int(chunks.count)])
        if let refusal = await publishFollowUps(requests, shutdown: shutdown) {
            log.warning("chunks not confirmed; the job goes back to the queue", [
                "failed": .int(refusal.count), "error": .string(refusal.error.description),
            ])
            _ = await message.nack(requeue: true)
            metrics.jobsCompleted.increment("requeued")
            return
        }
        guard await message.ack() == .settled else {
            metrics.jobsCompleted.increment("requeued")
            return
        }
        log.info("job split", ["recipients": .int(job.recipientCount)])
        metrics.jobsCompleted.increment("split")
    }
}
