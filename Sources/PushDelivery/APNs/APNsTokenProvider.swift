import Foundation
import PushCrypto
import Synchronization

/// The APNs provider token (ES256 JWT), made once and reused by every request of a team.
///
/// Apple's rules: a token older than an hour is refused (`ExpiredProviderToken`), and a new
/// token more often than every 20 minutes is refused too (`TooManyProviderTokenUpdates`).
/// So the token is renewed after `renewAfter` (50 min) and never sooner than
/// `minimumLifetime` (20 min) after the previous one — even when asked to.
public final class APNsTokenProvider: Sendable {
    private struct Current {
        let bearer: BearerToken
        let issuedAt: Date
    }

    public let teamID: String
    public let keyID: String
    private let signer: JWSSigner
    private let now: @Sendable () -> Date
    private let renewAfter: TimeInterval
    private let minimumLifetime: TimeInterval
    private let current = Mutex<Current?>(nil)

    public init(
        teamID: String, keyID: String, privateKeyPEM: String, now: @escaping @Sendable () -> Date = Date.init,
        renewAfter: Duration = .seconds(50 * 60), minimumLifetime: Duration = .seconds(20 * 60)
    ) throws(JWSSignerError) {
        self.teamID = teamID
        self.keyID = keyID
        self.signer = try JWSSigner(algorithm: .es256, privateKeyPEM: privateKeyPEM)
        self.now = now
        self.renewAfter = TimeInterval(renewAfter.components.seconds)
        self.minimumLifetime = TimeInterval(minimumLifetime.components.seconds)
    }

    /// The token to send now, renewed if it is `renewAfter` old.
    public func token() throws(JWSSignerError) -> String {
        try bearer().token
    }

    /// `token()` with its `authorization` header value.
    public func bearer() throws(JWSSignerError) -> BearerToken {
        try current.withLock { (current) throws(JWSSignerError) -> BearerToken in
            let now = self.now()
            // Read in place rather than bound by `if let`, which copies the pair: part of the
            // retains of shared objects cut in `f7fe513` (counted together, not per site).
            if let issuedAt = current?.issuedAt, now.timeIntervalSince(issuedAt) < renewAfter, let bearer = current?.bearer {
                return bearer
            }
            let fresh = try issue(at: now)
            current = fresh
            return fresh.bearer
        }
    }

    /// After APNs answered `ExpiredProviderToken` for `rejected`: renews unless that would
    /// break the 20-minute rule (or another request already renewed it), and returns the
    /// token to retry with.
    public func renew(rejected: String) throws(JWSSignerError) -> String {
        try renewBearer(rejected: rejected).token
    }

    /// `renew(rejected:)` with the token's `authorization` header value.
    public func renewBearer(rejected: String) throws(JWSSignerError) -> BearerToken {
        try current.withLock { (current) throws(JWSSignerError) -> BearerToken in
            let now = self.now()
            if let existing = current {
                if existing.bearer.token != rejected || now.timeIntervalSince(existing.issuedAt) < minimumLifetime {
                    return existing.bearer
                }
            }
            let fresh = try issue(at: now)
            current = fresh
            return fresh.bearer
        }
    }

    private func issue(at date: Date) throws(JWSSignerError) -> Current {
        let header = "{\"alg\":\"ES256\",\"kid\":\(JSONString.quote(keyID))}"
        let claims = "{\"iss\":\(JSONString.quote(teamID)),\"iat\":\(Int64(date.timeIntervalSince1970))}"
        return Current(bearer: BearerToken(try signer.token(header: header, claims: claims), scheme: "bearer"), issuedAt: date)
    }
}
