import PushModel
import PushQueue

extension Topology {
    /// Routing key of `key.invalid` events on `eventsExchange` (nothing is bound by default).
    static let keyInvalidRoutingKey = KeyInvalidEvent.name
    /// Routing key of dead letters (the dead exchange routes every message to its queue).
    static let deadLetterRoutingKey = "dead"
}

/// What follow-ups carry over from the job message that caused them.
struct JobMessage: Sendable {
    let body: [UInt8]
    let headers: [String: HeaderValue]
    let messageID: String?
    /// The queue it was consumed from (`x-pushd-original-queue` of a dead letter).
    let queue: String
}

extension JobMessage {
    init(_ message: QueueMessage) {
        self.init(body: message.body, headers: message.headers, messageID: message.messageID, queue: message.queue)
    }
}

extension FollowUp {
    /// The one place follow-ups become messages: exchanges and routing keys come from the
    /// topology, bodies from the shared event types and the job document.
    ///
    /// - Parameters:
    ///   - message: the job message that caused the follow-up (its headers and id travel
    ///     with a dead letter).
    ///   - document: the parsed job; nil when intake refused it (the dead letter is then the
    ///     body as received).
    func publishRequest(topology: Topology, message: JobMessage, document: JobDocument?) -> PublishRequest {
        switch self {
        case .retry(let state, let tier):
            let body = document?.json(retry: state) ?? message.body
            let jobID = document?.job.jobID ?? message.messageID ?? ""
            return PublishRequest(
                exchange: topology.retryExchange, routingKey: tier.name,
                message: OutgoingMessage(body: body, contentType: "application/json", messageID: "\(jobID)#\(state.attempt)"))
        case .tokenInvalid(let event):
            return Self.event(event, routingKey: Topology.tokenInvalidRoutingKey, topology: topology, mandatory: true)
        case .keyInvalid(let event):
            // Nobody may listen for key.invalid yet: not mandatory, so it is never reported
            // back as unroutable.
            return Self.event(event, routingKey: Topology.keyInvalidRoutingKey, topology: topology, mandatory: false)
        case .jobCompleted(let event):
            // Its message id is the job id, the consumers' de-duplication key; not mandatory,
            // since a producer binds a queue only if it asks for the event.
            return Self.event(event, routingKey: JobCompletedEvent.name, topology: topology, mandatory: false)
        case .deadLetter(let reason, let state):
            var headers = message.headers
            headers["x-pushd-reason"] = .string(String(reason.description.prefix(1000)))
            headers["x-pushd-original-queue"] = .string(message.queue)
            let body = state.flatMap { state in document?.json(retry: state) } ?? message.body
            return PublishRequest(
                exchange: topology.deadExchange, routingKey: Topology.deadLetterRoutingKey,
                message: OutgoingMessage(body: body, contentType: "application/json", messageID: message.messageID, headers: headers))
        }
    }

    private static func event(_ event: some PushEvent, routingKey: String, topology: Topology, mandatory: Bool) -> PublishRequest {
        PublishRequest(
            exchange: topology.eventsExchange, routingKey: routingKey,
            message: OutgoingMessage(body: event.json, contentType: "application/json", messageID: event.eventID),
            mandatory: mandatory)
    }
}
