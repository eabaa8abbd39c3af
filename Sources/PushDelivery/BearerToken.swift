/// A bearer token with its `authorization` header value, built once per token.
///
/// Every push sends the header, and the token lives for up to an hour: building the
/// ~200-byte value per push was an allocation and a copy each time.
public struct BearerToken: Sendable, Equatable {
    public let token: String
    /// `scheme token`, as the header carries it.
    public let authorization: String

    /// `scheme` as the service spells it: APNs documents `bearer`, Google `Bearer`.
    public init(_ token: String, scheme: String) {
        self.token = token
        self.authorization = scheme + " " + token
    }
}
