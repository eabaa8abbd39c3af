import Foundation
import PushRuntime
import Synchronization

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
    private let latestHeaderBlock = Mutex<(authorization: String, block: HeaderBlock)?>(nil)

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
        return await settle(await attempt(body: body, bearer: bearer), body: body, bearer: bearer)
    }

    /// `send` without a task per message: `completion` is called exactly once. With a fresh
    /// access token and an answer that needs nothing more, it is settled on the HTTP/2 loop
    /// thread where the answer arrives; a token to fetch, a lost connection or a refused
    /// token take the awaited path, in a task adopted by `group`.
    public nonisolated(nonsending) func submit(
        body: [UInt8], group: RequestGroup, completion: @escaping @Sendable (DeliveryOutcome) -> Void
    ) async {
        guard let bearer = tokens.freshBearer() else {
            group.adopt(Task { completion(await self.send(body: body)) })
            return
        }
        await http.submit(request(body: body, bearer: bearer), group: group) { [self] result in
            let first = Attempt(result, classify: { FCMResponseClassifier.classify($0) })
            guard Self.isSettled(first) else {
                group.adopt(Task { completion(await self.settle(first, body: body, bearer: bearer)) })
                return
            }
            completion(first.outcome)
        }
    }

    /// What a first attempt comes to: itself, or the resend it calls for.
    private nonisolated(nonsending) func settle(_ first: Attempt, body: [UInt8], bearer: BearerToken) async -> DeliveryOutcome {
        if first.connectionLost { return await attempt(body: body, bearer: bearer).outcome }
        if Self.isUnauthenticated(first.outcome) {
            // The access token was revoked or expired early: fetch a new one and retry once.
            do { return await attempt(body: body, bearer: try await tokens.invalidateBearer(bearer.token)).outcome } catch {
                return Self.outcome(for: error)
            }
        }
        return first.outcome
    }

    private static func isSettled(_ first: Attempt) -> Bool {
        !first.connectionLost && !isUnauthenticated(first.outcome)
    }

    private static func isUnauthenticated(_ outcome: DeliveryOutcome) -> Bool {
        if case .configurationError(let reason, _) = outcome, FCMErrorCode(reason) == .unauthenticated { return true }
        return false
    }

    private func request(body: [UInt8], bearer: BearerToken) -> HTTPRequest {
        HTTPRequest(
            url: sendURL, sharedHeaders: headerBlock(for: bearer), body: body, timeout: configuration.requestTimeout,
            responseHeaderNames: FCMResponseClassifier.headerNames)
    }

    /// Every message's headers, encoded once per access token (see `HeaderBlock`).
    private func headerBlock(for bearer: BearerToken) -> HeaderBlock {
        // Compared under the lock, in place, rather than on a copy of the pair (taken out, or
        // bound by `guard let`): part of the retains cut in `f7fe513`, counted together.
        if let block = latestHeaderBlock.withLock({ latest -> HeaderBlock? in
            guard latest?.authorization == bearer.authorization else { return nil }
            return latest?.block
        }) {
            return block
        }
        let block = HeaderBlock([("authorization", bearer.authorization), ("content-type", "application/json; charset=utf-8")])
        latestHeaderBlock.withLock { $0 = (bearer.authorization, block) }
        return block
    }

    private nonisolated(nonsending) func attempt(body: [UInt8], bearer: BearerToken) async -> Attempt {
        await Attempt(sending: request(body: body, bearer: bearer), with: http, classify: { FCMResponseClassifier.classify($0) })
    }

    private static func outcome(for error: FCMAuthError) -> DeliveryOutcome {
        switch error {
        case .tokenEndpoint(let why): .retryLater(reason: "oauth: \(why)", retryAfter: nil)
        case .rejected(let why), .signing(let why): .configurationError(reason: "oauth: \(why)", status: 401)
        }
    }

    public var name: String { "fcm:\(projectID)" }

    /// The thread that sends this client's messages, as a task executor (`HTTP2Client.loopExecutor`).
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
