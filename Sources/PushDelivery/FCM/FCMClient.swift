import Foundation
import PushRuntime

/// Sends data messages through FCM HTTP v1 for one Firebase project.
public final class FCMClient: Service {
    public struct Configuration: Sendable {
        public var account: FCMServiceAccount
        /// Replaces `https://fcm.googleapis.com` (e.g. the local emulator).
        public var baseURLOverride: String?
        public var requestTimeout: Duration
        public var http: HTTP2Client.Configuration

        public init(
            account: FCMServiceAccount, baseURLOverride: String? = nil, requestTimeout: Duration = .seconds(15),
            http: HTTP2Client.Configuration = .init()
        ) {
            self.account = account
            self.baseURLOverride = baseURLOverride
            self.requestTimeout = requestTimeout
            self.http = http
        }
    }

    public var projectID: String { configuration.account.projectID }
    private let configuration: Configuration
    private let http: HTTP2Client
    private let tokens: FCMAccessTokenProvider
    private let sendURL: String

    public init(
        configuration: Configuration, logger: Logger = Logger(label: "fcm"), now: @escaping @Sendable () -> Date = Date.init
    ) throws(DeliveryConfigurationError) {
        self.configuration = configuration
        do { http = try HTTP2Client(configuration: configuration.http.naming("pushd-h2-fcm"), logger: logger) } catch {
            throw .transportUnavailable("\(error)")
        }
        tokens = try FCMAccessTokenProvider(account: configuration.account, http: http, now: now)
        let base = configuration.baseURLOverride ?? "https://fcm.googleapis.com"
        sendURL = "\(base)/v1/projects/\(configuration.account.projectID)/messages:send"
    }

    /// Sends one message body (built by `FCMMessageTemplate`). Never throws.
    public nonisolated(nonsending) func send(body: [UInt8]) async -> DeliveryOutcome {
        let bearer: BearerToken
        if let fresh = tokens.freshBearer() {
            bearer = fresh
        } else {
            do { bearer = try await tokens.bearer() } catch {
                return Self.outcome(for: error)
            }
        }
        let first = await attempt(body: body, bearer: bearer)
        if first.connectionLost { return await attempt(body: body, bearer: bearer).outcome }
        if case .configurationError(let reason, _) = first.outcome, FCMErrorCode(reason) == .unauthenticated {
            // The access token was revoked or expired early: fetch a new one and retry once.
            do { return await attempt(body: body, bearer: try await tokens.invalidateBearer(bearer.token)).outcome } catch {
                return Self.outcome(for: error)
            }
        }
        return first.outcome
    }

    private nonisolated(nonsending) func attempt(body: [UInt8], bearer: BearerToken) async -> Attempt {
        let request = HTTPRequest(
            url: sendURL,
            headers: [("authorization", bearer.authorization), ("content-type", "application/json; charset=utf-8")],
            body: body, timeout: configuration.requestTimeout, responseHeaderNames: FCMResponseClassifier.headerNames)
        return await Attempt(sending: request, with: http, classify: { FCMResponseClassifier.classify($0) })
    }

    private static func outcome(for error: FCMAuthError) -> DeliveryOutcome {
        switch error {
        case .tokenEndpoint(let why): .retryLater(reason: "oauth: \(why)", retryAfter: nil)
        case .rejected(let why), .signing(let why): .configurationError(reason: "oauth: \(why)", status: 401)
        }
    }

    public var name: String { "fcm:\(projectID)" }

    /// Runs the HTTP/2 loop until `shutdown` (see `HTTP2Client.run`).
    public func run(shutdown: ShutdownSignal) async throws {
        try await http.run(shutdown: shutdown)
    }

    /// Starts the HTTP/2 loop, for a client used outside a service group. Idempotent.
    public func start() {
        http.start()
    }

    /// Closes every connection, once in-flight requests are done.
    public func shutdown() async {
        await http.shutdown()
    }
}
