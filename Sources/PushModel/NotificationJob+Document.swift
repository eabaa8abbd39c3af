import Foundation

/// A job together with the JSON object it was read from.
///
/// The worker parses a job message once and keeps both: the typed job to act on, and the
/// document to re-publish for a retry with only its `retry` state replaced, so fields a
/// producer added (the schema allows them) travel with every attempt.
public struct JobDocument: Sendable, Equatable {
    public let job: NotificationJob
    public let fields: [String: JSONValue]
    /// The plaintext and APNs template the size check built (`checkSealedSize`), for the
    /// worker to reuse; nil when the check built none. Derived from `job`, so left out of `==`.
    public let sealedParts: NotificationJob.SealedParts?

    /// Parses and validates, once (`NotificationJob(json:)` rules).
    public init(json: Data) throws(JobValidationError) {
        let root: JSONValue
        do {
            root = try JSONValue.parse(json)
        } catch {
            // What the parser refuses goes to `JSONDecoder`, which read jobs before it: a
            // text refused by both is not JSON, and none is refused that was read before.
            do { root = try JSONDecoder().decode(JSONValue.self, from: json) } catch {
                throw JobValidationError("", "not valid JSON")
            }
        }
        job = try NotificationJob(reading: FieldReader(root, path: ""))
        sealedParts = try job.checkSealedSize()
        guard case .object(let fields) = root else { throw JobValidationError("", "must be a JSON object") }
        self.fields = fields
    }

    public static func == (left: JobDocument, right: JobDocument) -> Bool {
        left.job == right.job && left.fields == right.fields
    }

    /// The document as JSON with `retry` set to `state`; sorted keys, every other field as received.
    public func json(retry state: NotificationJob.RetryState) -> [UInt8] {
        var fields = fields
        var retry: [String: JSONValue] = [
            "attempt": .number(Double(state.attempt)),
            "first_attempt_at": .string(RFC3339.string(from: state.firstAttemptAt)),
        ]
        // None for a broadcast, which has no devices: the retry is the whole job again.
        if !state.deviceIDs.isEmpty { retry["device_ids"] = .array(state.deviceIDs.map { .number(Double($0)) }) }
        fields["retry"] = .object(retry)
        return Array(JSONValue.object(fields).jsonText.utf8)
    }
}
