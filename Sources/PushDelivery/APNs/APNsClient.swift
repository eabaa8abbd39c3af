import Foundation
import PushRuntime

/// Sends pushes to APNs for one team (one `.p8` key): HTTP/2 with token authentication.
///
/// APNs binds a connection to one team, so each team gets its own `HTTP2Client` (its own
/// connections). On a new connection APNs allows a single stream until a request with a
/// valid token succeeds, so the very first request is sent alone and the rest wait for it.
public final class APNsClient: Service {
    public struct Configuration: Sendable {
        public var teamID: String
        public var keyID: String
        /// The `.p8` key's PEM text (read from a file or the environment, never logged).
        public var privateKeyPEM: String
        /// Replaces both APNs hosts (e.g. the local emulator's `https://127.0.0.1:8443`).
        public var baseURLOverride: String?
        /// Replace one environment's host; each wins over `baseURLOverride` for its own
        /// environment, so one misconfigured URL cannot make both environments the same.
        public var productionBaseURL: String?
        public var sandboxBaseURL: String?
        public var requestTimeout: Duration
        public var http: HTTP2Client.Configuration

        public init(
            teamID: String, keyID: String, privateKeyPEM: String, baseURLOverride: String? = nil,
            requestTimeout: Duration = .seconds(15), http: HTTP2Client.Configuration = .init()
        ) {
            self.teamID = teamID
            self.keyID = keyID
            self.privateKeyPEM = privateKeyPEM
            self.baseURLOverride = baseURLOverride
            self.requestTimeout = requestTimeout
            self.http = http
        }
    }

    let configuration: Configuration
    let http: HTTP2Client
    let tokens: APNsTokenProvider
    let firstRequest = FirstSuccessGate()
    let headerBlocks = APNsHeaderBlocks()
    private let logger: Logger

    public init(
        configuration: Configuration, logger: Logger = Logger(label: "apns"), now: @escaping @Sendable () -> Date = Date.init
    ) throws(DeliveryConfigurationError) {
        self.configuration = configuration
        self.logger = logger.with(["team": .string(configuration.teamID)])
        do {
            tokens = try APNsTokenProvider(
                teamID: configuration.teamID, keyID: configuration.keyID, privateKeyPEM: configuration.privateKeyPEM, now: now)
        } catch {
            throw .invalidCredentials("APNs key \(configuration.keyID): \(error)")
        }
        do {
            http = try HTTP2Client(configuration: configuration.http.naming("pushd-h2-apns"), logger: logger)
        } catch {
            throw .transportUnavailable("\(error)")
        }
    }

    /// Sends one push and classifies the answer. Never throws: every failure is an outcome.
    public nonisolated(nonsending) func send(_ notification: APNsNotification) async -> DeliveryOutcome {
        if let problem = notification.localProblem { return problem }
        let url = self.url(for: notification)
        let bearer: BearerToken
        do { bearer = try tokens.bearer() } catch {
            return .configurationError(reason: "cannot sign the provider token: \(error)", status: 0)
        }
        let first = await firstRequest.run { await self.attempt(notification, url: url, bearer: bearer) }
        return await settle(first, of: notification, url: url, bearer: bearer)
    }

    /// What a first attempt comes to: itself, or the resend it calls for.
    nonisolated(nonsending) func settle(_ first: Attempt, of notification: APNsNotification, url: String, bearer: BearerToken) async -> DeliveryOutcome {
        await settle(first, bearer: bearer) { await self.attempt(notification, url: url, bearer: $0) }
    }

    /// A first attempt's verdict, for device pushes and broadcasts alike, with `resend` to try
    /// again with a given token. A connection that went away under the request (GOAWAY, reset)
    /// is resent at once on a fresh one, which the engine opens. An expired provider token,
    /// answered to the first attempt or to that resend, is renewed (within the 20-minute rule)
    /// and tried once more; if APNs still refuses, or the renewal is not allowed yet, the push
    /// waits for a retry tier: never dropped.
    nonisolated(nonsending) func settle(
        _ first: Attempt, bearer: BearerToken, resend: nonisolated(nonsending) (BearerToken) async -> Attempt
    ) async -> DeliveryOutcome {
        let latest = first.connectionLost ? await resend(bearer) : first
        guard Self.isExpiredProviderToken(latest.outcome) else { return latest.outcome }
        guard let renewed = try? tokens.renewBearer(rejected: bearer.token), renewed != bearer else {
            return .retryLater(reason: "\(APNsReason.expiredProviderToken) (renewal not allowed yet)", retryAfter: nil)
        }
        logger.warning("APNs said the provider token expired; retrying with a renewed token")
        let second = await resend(renewed).outcome
        if Self.isExpiredProviderToken(second) {
            return .retryLater(reason: "\(APNsReason.expiredProviderToken) (after renewal)", retryAfter: nil)
        }
        return second
    }

    /// True when `settle` would return the first attempt's outcome as it is.
    static func isSettled(_ first: Attempt) -> Bool {
        !first.connectionLost && !isExpiredProviderToken(first.outcome)
    }

    static func isExpiredProviderToken(_ outcome: DeliveryOutcome) -> Bool {
        if case .configurationError(let reason, _) = outcome, APNsReason(reason) == .expiredProviderToken { return true }
        return false
    }

    func url(for notification: APNsNotification) -> String {
        "\(configuration.baseURL(for: notification.environment))/3/device/\(notification.deviceToken)"
    }

    func request(_ notification: APNsNotification, url: String, bearer: BearerToken) -> HTTPRequest {
        HTTPRequest(
            url: url, sharedHeaders: headerBlocks.block(for: notification, bearer: bearer), headers: notification.ownHeaders,
            body: notification.payload, timeout: configuration.requestTimeout, uniqueHeaderNames: APNsNotification.uniqueHeaderNames,
            responseHeaderNames: APNsResponseClassifier.headerNames)
    }

    private nonisolated(nonsending) func attempt(_ notification: APNsNotification, url: String, bearer: BearerToken) async -> Attempt {
        await Attempt(sending: request(notification, url: url, bearer: bearer), with: http, classify: { APNsResponseClassifier.classify($0) })
    }

    public var name: String { "apns:\(configuration.teamID)" }

    /// The thread that sends this client's pushes, as a task executor (`HTTP2Client.loopExecutor`).
    public var loopExecutor: (any TaskExecutor)? { http.loopExecutor }

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

/// Configuration that cannot work: reported once at start-up, with what to fix.
public enum DeliveryConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidCredentials(String)
    case transportUnavailable(String)

    public var description: String {
        switch self {
        case .invalidCredentials(let why): "invalid credentials: \(why)"
        case .transportUnavailable(let why): "HTTP/2 transport unavailable: \(why)"
        }
    }
}
