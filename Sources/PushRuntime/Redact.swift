/// What may appear in logs of values that must never appear whole.
public enum Redact {
    /// The first 8 characters of a push token and its length: enough to correlate with a
    /// device row, never enough to push to it.
    public static func token(_ token: String) -> String {
        guard token.count > 8 else { return "…(\(token.count))" }
        return "\(token.prefix(8))…(\(token.count))"
    }

    /// A connection URL without its password (`amqp://user:***@host/vhost`).
    ///
    /// Conservative, for URLs that may not even parse: everything between the scheme and the
    /// *last* `@` is credentials (as the AMQP parser reads them, and so that a password
    /// holding `@` or `/` is never half shown); only the user name before the first `:`
    /// stays.
    public static func url(_ url: String) -> String {
        guard let scheme = url.range(of: "://"),
              let at = url.range(of: "@", options: .backwards, range: scheme.upperBound..<url.endIndex)
        else { return url }
        let credentials = url[scheme.upperBound..<at.lowerBound]
        guard let colon = credentials.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at.lowerBound...])
    }
}
