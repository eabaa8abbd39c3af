/// A bearer token with its `authorization` header value, built once per token.
///
/// Every push sends the header, and the token lives for up to an hour: building the
/// ~200-byte value per push was an allocation and a copy each time.
///
/// A class: every push takes the current token from its provider and keeps it until the
/// answer (a renewal needs the one that was sent), from every sealing thread at once. As a
/// struct of two strings each of those copies was two retains and two releases of objects
/// all those threads share; as one immutable object, one of each.
public final class BearerToken: Sendable, Equatable {
    public let token: String
    /// `scheme token`, as the header carries it.
    public let authorization: String

    /// `scheme` as the service spells it: APNs documents `bearer`, Google `Bearer`.
    public init(_ token: String, scheme: String) {
        self.token = token
        self.authorization = scheme + " " + token
    }

    /// The same token sent the same way (the same object, in practice).
    public static func == (left: BearerToken, right: BearerToken) -> Bool {
        left === right || (left.token == right.token && left.authorization == right.authorization)
    }
}
