import Foundation
import PushCrypto

/// OAuth2 access tokens for FCM from a service account: an RS256 JWT assertion exchanged at
/// the token endpoint, cached until shortly before it expires.
///
/// An actor, so concurrent senders share one fetch instead of each asking Google.
public actor FCMAccessTokenProvider {
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private struct Cached {
        let token: String
        let expiresAt: Date
    }

    private let account: FCMServiceAccount
    private let signer: JWSSigner
    private let http: HTTP2Client
    private let now: @Sendable () -> Date
    /// Renew this long before expiry so no request carries a token about to lapse.
    private let renewalMargin: TimeInterval
    private var cached: Cached?
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
        if let cached, cached.expiresAt.timeIntervalSince(now()) > renewalMargin { return cached.token }
        return try await refresh()
    }

    /// Drops `rejected` (FCM answered 401 for it) and fetches a new one, unless another
    /// caller already did.
    public func invalidate(_ rejected: String) async throws(FCMAuthError) -> String {
        if let cached, cached.token != rejected { return cached.token }
        cached = nil
        return try await refresh()
    }

    private func refresh() async throws(FCMAuthError) -> String {
        let task: Task<Cached, any Error>
        if let pending {
            task = pending
        } else {
            task = Task { try await fetch() }
            pending = task
        }
        do {
            let fresh = try await task.value
            cached = fresh
            pending = nil
            return fresh.token
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
            throw response.status >= 500 ? .tokenEndpoint("HTTP \(response.status): \(reason)") : .rejected("HTTP \(response.status): \(reason)")
        }
        let lifetime = (object?["expires_in"] as? NSNumber)?.doubleValue ?? 3600
        return Cached(token: token, expiresAt: now().addingTimeInterval(lifetime))
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
