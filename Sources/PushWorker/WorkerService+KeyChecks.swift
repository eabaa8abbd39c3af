import PushStore

extension WorkerService {
    /// Records the keys this process checked in full since the last call, so that no
    /// worker runs OpenSSL's public-key check on them again (see `PublicKeyCache`). Called
    /// after a job is settled, never on the way to its ack. Best effort: after a failure the
    /// digests wait for the next call, and at worst another worker checks those keys again.
    func recordNewlyCheckedKeys() async {
        let digests = processor.keys.takeNewlyChecked()
        guard !digests.isEmpty else { return }
        do throws(StoreError) {
            try await processor.registry.recordPublicKeyChecks(digests)
        } catch {
            processor.keys.returnNewlyChecked(digests)
            logger.warning("could not record checked device keys", ["keys": .int(digests.count), "error": .string("\(error)")])
        }
    }
}
