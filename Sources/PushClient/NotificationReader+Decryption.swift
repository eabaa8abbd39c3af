/// Opening `encrypted_data`: one path for alerts and Live Activities.
extension NotificationReader {
    /// Parses the envelope, picks the key (`kid` when the store has it, else the current
    /// key, as clients that ignore `kid` do), opens it and parses the plaintext as a JSON
    /// object. Any failure is a reason, never a partial result.
    public func decryptObject(_ sealed: PayloadValue) -> Result<[String: PayloadValue], FallbackReason> {
        let envelope: SealedEnvelope
        do {
            envelope = try SealedEnvelope(value: sealed)
        } catch {
            return .failure(error)
        }
        let key: any PrivateKeyHandle
        do {
            guard let found = try privateKey(for: envelope.keyID) else { return .failure(.noKey) }
            key = found
        } catch {
            switch error {
            case .locked: return .failure(.locked)
            case .unreadable(let why): return .failure(.keyStoreFailure(why))
            }
        }
        let plaintext: [UInt8]
        do {
            plaintext = try key.open(envelope)
        } catch {
            switch error {
            case .wrongKey: return .failure(.wrongKey)
            case .authenticationFailed: return .failure(.authenticationFailed)
            }
        }
        guard let object = PayloadValue(json: plaintext)?.objectValue else {
            return .failure(.malformedContent("the plaintext is not a JSON object"))
        }
        return .success(object)
    }

    private func privateKey(for keyID: String?) throws(KeyStoreError) -> (any PrivateKeyHandle)? {
        if let keyID, let key = try keyStore.privateKey(for: keyID) { return key }
        return try keyStore.privateKey(for: nil)
    }
}
