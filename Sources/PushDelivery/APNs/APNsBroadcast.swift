import Foundation

/// One Live Activity broadcast (iOS 18): a single payload that APNs copies to every device
/// subscribed to a channel. `POST /4/broadcasts/apps/<bundle>` with `apns-channel-id`; no
/// `apns-topic` (the bundle is in the path); answers carry `apns-request-id`.
public struct APNsBroadcast: Sendable {
    /// The limit for a broadcast payload (a device push allows 4096).
    public static let payloadLimit = 5120

    public var bundleID: String
    /// The channel id as APNs returned it at creation (standard base64).
    public var channelID: String
    public var environment: APNsEnvironment
    public var priority: APNsNotification.Priority
    /// Epoch seconds; a channel without message storage takes only 0 (or none).
    public var expiration: Int64?
    /// Our id for this request (lowercase UUID), echoed back as `apns-request-id`.
    public var requestID: UUID
    public var payload: [UInt8]

    public init(
        bundleID: String, channelID: String, environment: APNsEnvironment, priority: APNsNotification.Priority = .conservesPower,
        expiration: Int64? = nil, requestID: UUID = UUID(), payload: [UInt8]
    ) {
        self.bundleID = bundleID
        self.channelID = channelID
        self.environment = environment
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
        self.payload = payload
    }

    var path: String { "/4/broadcasts/apps/\(bundleID)" }

    var localProblem: DeliveryOutcome? {
        if payload.count > Self.payloadLimit {
            return .rejected(reason: APNsReason.payloadTooLarge.description, status: 413)
        }
        if priority == .low { return .rejected(reason: APNsReason.badPriority.description, status: 400) }
        return nil
    }

    /// `authorization` is the header's whole value (`BearerToken.authorization`).
    func headers(authorization: String) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [
            ("authorization", authorization),
            ("apns-push-type", APNsPushType.liveactivity.rawValue),
            ("apns-channel-id", channelID),
            ("apns-priority", String(priority.rawValue)),
            ("apns-request-id", requestID.uuidString.lowercased()),
            ("content-type", "application/json"),
        ]
        if let expiration { headers.append(("apns-expiration", String(expiration))) }
        return headers
    }
}

extension APNsClient {
    /// Sends one broadcast and classifies the answer as for device pushes, except that 400
    /// `ChannelNotRegistered` (the channel was deleted) is configuration: not retried, and
    /// there is no token to prune. Never throws.
    public nonisolated(nonsending) func send(_ broadcast: APNsBroadcast) async -> DeliveryOutcome {
        if let problem = broadcast.localProblem { return problem }
        let url = url(for: broadcast)
        let bearer: BearerToken
        do { bearer = try tokens.bearer() } catch {
            return .configurationError(reason: "cannot sign the provider token: \(error)", status: 0)
        }
        @Sendable func attempt(_ bearer: BearerToken) async -> Attempt {
            let request = HTTPRequest(
                url: url, headers: broadcast.headers(authorization: bearer.authorization), body: broadcast.payload,
                timeout: configuration.requestTimeout)
            return await Attempt(sending: request, with: http, classify: { Self.classifyBroadcast($0) })
        }
        let first = await firstRequest.run { await attempt(bearer) }
        return await settle(first, bearer: bearer, resend: attempt)
    }

    /// The environment's host as for device pushes (its own URL, else the shared one, else
    /// Apple's), then the broadcast's path.
    func url(for broadcast: APNsBroadcast) -> String {
        configuration.baseURL(for: broadcast.environment) + broadcast.path
    }

    static func classifyBroadcast(_ response: HTTPResponse) -> DeliveryOutcome {
        let outcome = APNsResponseClassifier.classify(response)
        if case .rejected(let reason, let status) = outcome, status == 400, APNsReason(reason).description == "ChannelNotRegistered" {
            return .configurationError(reason: reason, status: status)
        }
        if case .delivered = outcome { return .delivered(id: response.headers["apns-request-id"]) }
        return outcome
    }
}
