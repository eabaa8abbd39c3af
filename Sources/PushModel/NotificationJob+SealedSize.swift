/// Whether a job's private content can fit any device once sealed, decided from the job
/// alone, before any device is looked up or any envelope sealed.
///
/// The sealed size is a function of the plaintext length and of the job's clear-text fields
/// (fallback, presentation, Expo ids): the smallest envelope any device can get is the one
/// for an RSA-2048 key without a `kid`. If even that payload is over APNs's and FCM's limits
/// for every platform the job addresses, no device can receive it, and sealing it thousands
/// of times only to refuse each push as `PayloadTooLarge` would burn CPU for nothing. Both
/// `pushd enqueue` (`JobPublisher`) and the worker's intake refuse such a job with this
/// error.
extension NotificationJob {
    /// The smallest wrapped AES key: RSA-2048 (registration refuses anything smaller).
    static let smallestWrappedKeyBytes = 256
    /// AES-GCM nonce and tag, fixed by the envelope format.
    static let envelopeNonceBytes = 12
    static let envelopeTagBytes = 16

    /// What the check built that the worker needs again for every device of the job: the
    /// plaintext to seal, and the APNs payload template when the job has an iOS app. Handed
    /// on (`JobDocument.sealedParts`) so a job's intake renders them once, not twice.
    public struct SealedParts: Sendable {
        public let plaintext: [UInt8]
        public let apnsTemplate: APNsPayloadTemplate?
    }

    /// Throws when no device could receive the job's content once sealed. Returns what it
    /// built (`SealedParts`); nil when it checked nothing (not an alert, or nothing sealed).
    @discardableResult
    public func checkSealedSize() throws(JobValidationError) -> SealedParts? {
        guard pushType == .alert, let plaintext = SealedContent.plaintext(for: self) else { return nil }
        let envelope = Self.standInEnvelope(plaintextBytes: plaintext.count)
        var smallest: (platform: String, bytes: Int, limit: Int)?
        var apnsTemplate: APNsPayloadTemplate?
        if app.iosBundleID != nil {
            let template = APNsPayloadTemplate(job: self)
            apnsTemplate = template
            do {
                _ = try template.payload(encryptedData: envelope)
                return SealedParts(plaintext: plaintext, apnsTemplate: template)
            } catch {
                if case .tooLarge(let bytes, let limit) = error { smallest = ("APNs payload", bytes, limit) }
            }
        }
        if app.fcmProjectID != nil {
            let template = FCMMessageTemplate(
                job: self, priority: .high, collapseKey: nil, ttlSeconds: nil, notificationTag: standInNotificationTag)
            do {
                _ = try template.body(token: "", encryptedData: envelope)
                return SealedParts(plaintext: plaintext, apnsTemplate: apnsTemplate)
            } catch {
                if case .tooLarge(let bytes, let limit) = error, smallest == nil { smallest = ("FCM data", bytes, limit) }
            }
        }
        guard let smallest else { return SealedParts(plaintext: plaintext, apnsTemplate: apnsTemplate) }
        throw JobValidationError(
            "content",
            "the sealed content cannot fit any device: \(plaintext.count) bytes of plaintext make a \(smallest.platform) of at least \(smallest.bytes) bytes, the limit is \(smallest.limit) (shorten content.data, the message or the fallback text)")
    }

    /// An envelope exactly as long as the real one for an RSA-2048 key without `kid`, with
    /// the same characters to escape (its quotes): the payload builders measure it as they
    /// would measure the real one.
    ///
    /// Built as bytes: `String(repeating:count:)` appended its character one at a time, for
    /// about 2,000 characters of every job the worker took in.
    public static func standInEnvelope(plaintextBytes: Int) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(96 + (smallestWrappedKeyBytes + plaintextBytes) * 4 / 3)
        func append(_ literal: StaticString) { literal.withUTF8Buffer { text.append(contentsOf: $0) } }
        func base64(_ bytes: Int) { text.append(contentsOf: repeatElement(UInt8(ascii: "A"), count: (bytes + 2) / 3 * 4)) }
        append("{\"encrypted_key\":\"")
        base64(smallestWrappedKeyBytes)
        append("\",\"cipher_text\":\"")
        base64(plaintextBytes)
        append("\",\"nonce\":\"")
        base64(envelopeNonceBytes)
        append("\",\"tag\":\"")
        base64(envelopeTagBytes)
        append("\"}")
        return String(decoding: text, as: UTF8.self)
    }

    /// As long as the worker's notification tag (`CollapseIdentifier`): the explicit
    /// collapse id, the job id, or a 64-character hash of a longer job id.
    var standInNotificationTag: String {
        if let explicit = delivery.collapseID { return explicit }
        return jobID.utf8.count <= 64 ? jobID : String(repeating: "0", count: 64)
    }
}
