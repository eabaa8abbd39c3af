/// Whether a host name or address stays on this machine: traffic to it never crosses a
/// network, so plain-text transport is acceptable there and nowhere else.
public enum LoopbackHost {
    public static func contains(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let lowered = bare.lowercased()
        if lowered == "localhost" || lowered.hasSuffix(".localhost") || lowered == "::1" { return true }
        // A Unix-domain socket directory (libpq): local by construction.
        if bare.hasPrefix("/") || bare.hasPrefix("@") { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
