import Foundation
import PushCrypto
import Synchronization

/// OAuth2 access tokens for FCM from a service account: an RS256 JWT assertion exchanged at
/// the token endpoint, cached until shortly before it expires.
///
/// An actor, so concurrent senders share one fetch instead of each asking Google. The cached
/// token sits behind its own lock rather than in the actor's state, so that `freshBearer()`
/// reads it from any thread: every push reads it, and a hop onto the actor and back for each
/// one cost more than the read.
public actor FCMAccessTokenProvider {
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private struct Cached: Sendable {
        let bearer: BearerToken
        let expiresAt: Date
    }

    private let account: FCMServiceAccount
    private let signer: JWSSigner
    private let http: HTTP2Client
    private let now: @Sendable () -> Date
    /// Renew this long before expiry so no request carries a token about to lapse.
    private let renewalMargin: TimeInterval
    /// Written only by the actor (a fetch, an invalidation); read by anyone.
    private nonisolated let cached = Mutex<Cached?>(nil)
    private var pending: Task<Cached, any Error>?

    public init(
        account: FCMServiceAccount, http: HTTP2Client, now: @escaping @Sendable () -> Date = Date.init,
        renewalMargin: Duration = .seconds(300)
    ) throws(DeliveryConfigurationError) {
        self.account = account
        do { signer = try JWSSigner(algorithm: .rs256, privateKeyPEM: account.privateKey) } catch {
            throw .invalidCredentials("FCM service account \(account.clientEmail): \(error)")
        }
        self.http = http
        self.now = now
        self.renewalMargin = TimeInterval(renewalMargin.components.seconds)
    }

    /// A valid access token, fetched if none is cached or it is about to expire.
    public func token() async throws(FCMAuthError) -> String {
        try await bearer().token
    }

    /// `token()` with its `authorization` header value.
    public func bearer() async throws(FCMAuthError) -> BearerToken {
        if let fresh = freshBearer() { return fresh }
        return try await refresh()
    }

    /// The cached token if it is not about to expire, without waiting for the actor; nil
    /// when `bearer()` has to fetch one.
    public nonisolated func freshBearer() -> BearerToken? {
        // Decided under the lock, where the pair lies, rather than on a copy taken out: part
        // of the retains of shared objects cut in `f7fe513` (counted together, not per site).
        let instant = self.now()
        return cached.withLock { cached -> BearerToken? in
            guard let expiresAt = cached?.expiresAt, expiresAt.timeIntervalSince(instant) > renewalMargin else { return nil }
            return cached?.bearer
        }
    }

    /// Drops `rejected` (FCM answered 401 for it) and fetches a new one, unless another
    /// caller already did.
    public func invalidate(_ rejected: String) async throws(FCMAuthError) -> String {
        try await invalidateBearer(rejected).token
    }

    /// `invalidate(_:)` with the new token's `authorization` header value.
    public func invalidateBearer(_ rejected: String) async throws(FCMAuthError) -> BearerToken {
        let current = cached.withLock { cached -> Cached? in
            if let held = cached, held.bearer.token != rejected { return held }
            cached = nil
            return nil
        }
        if let current { return current.bearer }
        return try await refresh()
    }

    private func refresh() async throws(FCMAuthError) -> BearerToken {
        let task: Task<Cached, any Error>
        if let pending {
            task = pending
        } else {
            task = Task { try await fetch() }
            pending = task
        }
        do {
            let fresh = try await task.value
            cached.withLock { $0 = fresh }
            pending = nil
            return fresh.bearer
        } catch {
            pending = nil
            throw (error as? FCMAuthError) ?? .tokenEndpoint("\(error)")
        }
    }

    private func fetch() async throws(FCMAuthError) -> Cached {
        let issuedAt = Int64(now().timeIntervalSince1970)
        var header = "{\"alg\":\"RS256\",\"typ\":\"JWT\""
        if let keyID = account.privateKeyID { header += ",\"kid\":\(JSONString.quote(keyID))" }
        header += "}"
        let claims = "{\"iss\":\(JSONString.quote(account.clientEmail)),\"scope\":\(JSONString.quote(Self.scope)),"
            + "\"aud\":\(JSONString.quote(account.tokenURI)),\"iat\":\(issuedAt),\"exp\":\(issuedAt + 3600)}"
        let assertion: String
        do { assertion = try signer.token(header: header, claims: claims) } catch {
            throw .signing("\(error)")
        }
        let form = "grant_type=" + formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + formEncode(assertion)
        let request = HTTPRequest(
            url: account.tokenURI, headers: [("content-type", "application/x-www-form-urlencoded")],
            body: Array(form.utf8), timeout: .seconds(15))
        let response: HTTPResponse
        do { response = try await http.send(request) } catch {
            throw .tokenEndpoint("\(error)")
        }
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        guard response.status == 200, let token = object?["access_token"] as? String else {
            let reason = (object?["error_description"] as? String) ?? (object?["error"] as? String) ?? bodyExcerpt(response.body)
            throw Self.failure(status: response.status, reason: reason)
        }
        let lifetime = (object?["expires_in"] as? NSNumber)?.doubleValue ?? 3600
        return Cached(bearer: BearerToken(token, scheme: "Bearer"), expiresAt: now().addingTimeInterval(lifetime))
    }

    /// A refused token request: worth another try later when the endpoint is overloaded or
    /// slow (5xx, 429 Too Many Requests, 408 Request Timeout), the pushes waiting for a retry
    /// tier; any other answer is the credentials' own fault (a revoked key, a wrong account).
    static func failure(status: Int, reason: String) -> FCMAuthError {
        let message = "HTTP \(status): \(reason)"
        return status >= 500 || status == 429 || status == 408 ? .tokenEndpoint(message) : .rejected(message)
    }

    private func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

public enum FCMAuthError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The token endpoint refused the service account (disabled key, wrong project…).
    case rejected(String)
    /// The token endpoint could not be reached or failed: transient.
    case tokenEndpoint(String)
    case signing(String)

    public var description: String {
        switch self {
        case .rejected(let why): "OAuth2 token request refused: \(why)"
        case .tokenEndpoint(let why): "OAuth2 token endpoint unavailable: \(why)"
        case .signing(let why): "cannot sign the OAuth2 assertion: \(why)"
        }
    }
}
