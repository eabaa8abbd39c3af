import Foundation
import PushModel
import PushStore

extension CleanupService {
    /// Why an event cannot be acted on; logged when it is dead-lettered. Names fields, never
    /// their values (a token is private).
    struct UnusableEvent: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    /// The prune request a `token.invalid` event asks for, or why there is none, in which
    /// case the event is dead-lettered: an event that cannot be read, an `invalid_since` that
    /// cannot be parsed, no `occurred_at` (each would leave the prune unbounded), an iOS event
    /// without an APNs environment.
    ///
    /// The bound: a token registered after it is kept. APNs's 410 timestamp when the provider
    /// gave one, otherwise the time of the failed attempt (`occurred_at`), so a device that
    /// registered its token again after the push failed is not deleted for it; never later
    /// than `occurred_at` nor than `now`, since an event is untrusted input (a forged one, or a
    /// worker's clock ahead) and a later bound would delete a device registered since.
    static func pruneRequest(from body: [UInt8], now: Date = Date()) -> Result<PruneRequest, UnusableEvent> {
        let event: TokenInvalidEvent
        do { event = try JSONDecoder().decode(TokenInvalidEvent.self, from: Data(body)) } catch {
            return .failure(UnusableEvent(description: "unreadable: \(Self.field(of: error))"))
        }
        if event.platform == .ios && event.environment == nil {
            return .failure(UnusableEvent(description: "an iOS event without environment"))
        }
        // The decoder reads a missing occurred_at as 1970 (other consumers may not need it).
        guard event.occurredAt.timeIntervalSince1970 > 0 else {
            return .failure(UnusableEvent(description: "no occurred_at after 1970-01-01"))
        }
        let bound = min(event.invalidSince ?? event.occurredAt, event.occurredAt, now)
        return .success(PruneRequest(
            appID: event.appID, platform: event.platform, environment: event.environment, token: event.token,
            invalidSince: bound, tokenKind: event.tokenKind))
    }

    /// The field a decoding error is about (the coding path), or its kind.
    static func field(of error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        let context: DecodingError.Context
        switch error {
        case .keyNotFound(let key, let found): return (found.codingPath.map(\.stringValue) + [key.stringValue]).joined(separator: ".") + " missing"
        case .dataCorrupted(let found), .typeMismatch(_, let found), .valueNotFound(_, let found): context = found
        @unknown default: return "not a token.invalid event"
        }
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        return path.isEmpty ? "not a token.invalid event" : "\(path) invalid"
    }
}
