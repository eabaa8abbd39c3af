/// Splitting a large job into chunk jobs.
extension JobDocument {
    /// True if this job is split rather than delivered: more recipients than `chunkSize`, a
    /// producer's first attempt (no retry state), not itself a chunk, not a Live Activity job.
    public func needsSplitting(chunkSize: Int) -> Bool {
        job.chunk == nil && job.retry == nil && job.liveActivity == nil && job.recipientCount > chunkSize
    }

    /// The chunk jobs, as JSON: the same document with `chunkSize` consecutive recipients
    /// each, `job_id` = `<job_id>#<n>` (n from 1), a `chunk` block naming the original (whose
    /// id the workers derive the collapse id from, so a phone that gets a chunk twice, after
    /// a redelivered original re-split into the same chunks, shows one notification), and
    /// the bulk lane. Deterministic: the same document always gives the same bytes.
    public func chunks(chunkSize: Int) -> [(jobID: String, json: [UInt8])] {
        let size = max(1, chunkSize)
        let (key, all): (String, [JSONValue]) = switch job.recipients {
        case .recipientIDs(let ids): ("recipient_ids", ids.map { .string($0) })
        case .deviceIDs(let ids): ("device_ids", ids.map { .number(Double($0)) })
        }
        let count = (all.count + size - 1) / size
        var delivery: [String: JSONValue] = if case .object(let existing)? = fields["delivery"] { existing } else { [:] }
        delivery["lane"] = .string(NotificationJob.Lane.bulk.rawValue)
        var chunks: [(jobID: String, json: [UInt8])] = []
        chunks.reserveCapacity(count)
        for index in 1...max(1, count) {
            let slice = Array(all[((index - 1) * size)..<min(all.count, index * size)])
            let id = NotificationJob.Chunk.id(of: job.jobID, index: index)
            var chunk = fields
            chunk["job_id"] = .string(id)
            chunk["recipients"] = .object([key: .array(slice)])
            chunk["delivery"] = .object(delivery)
            chunk["chunk"] = .object([
                "job_id": .string(job.jobID), "index": .number(Double(index)), "count": .number(Double(count)),
            ])
            chunks.append((id, Array(JSONValue.object(chunk).jsonText.utf8)))
        }
        return chunks
    }
}
