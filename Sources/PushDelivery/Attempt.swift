/// One request's outcome, and whether it failed because the connection went away (then a
/// resend on a fresh connection is safe and worth doing at once).
struct Attempt: Sendable {
    let outcome: DeliveryOutcome
    let connectionLost: Bool

    init(outcome: DeliveryOutcome, connectionLost: Bool) {
        self.outcome = outcome
        self.connectionLost = connectionLost
    }

    nonisolated(nonsending) init(sending request: HTTPRequest, with http: HTTP2Client, classify: (HTTPResponse) -> DeliveryOutcome) async {
        do {
            self.init(outcome: classify(try await http.send(request)), connectionLost: false)
        } catch {
            self.init(.failure(error), classify: classify)
        }
    }

    /// A request's result, classified.
    init(_ result: Result<HTTPResponse, HTTPClientError>, classify: (HTTPResponse) -> DeliveryOutcome) {
        switch result {
        case .success(let response):
            self.init(outcome: classify(response), connectionLost: false)
        case .failure(let error):
            let lost: Bool
            switch error {
            case .connectionFailed, .transport: lost = true
            default: lost = false
            }
            self.init(outcome: DeliveryOutcome(transportError: error), connectionLost: lost)
        }
    }
}

extension DeliveryOutcome {
    /// A transport failure as an outcome: retryable ones are `retryLater`; TLS verification
    /// is configuration.
    init(transportError error: HTTPClientError) {
        switch error {
        case .timedOut: self = .retryLater(reason: "timeout", retryAfter: nil)
        case .connectionFailed(let why), .transport(_, let why): self = .retryLater(reason: "connection: \(why)", retryAfter: nil)
        case .tlsVerificationFailed(let why): self = .configurationError(reason: "TLS: \(why)", status: 0)
        case .shutDown, .cancelled: self = .retryLater(reason: "shutting down", retryAfter: nil)
        }
    }
}
