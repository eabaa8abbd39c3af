import Foundation
import PushModel
import PushStore

extension CleanupService {
    /// The prune request a `token.invalid` event asks for; nil for anything else, which is
    /// dead-lettered: an event that cannot be read, an `invalid_since` that cannot be parsed
    /// (never read as absent, which would prune unconditionally), an iOS event without an
    /// APNs environment.
    ///
    /// The bound: a token registered after it is kept. APNs's 410 timestamp when the provider
    /// gave one; otherwise the time of the failed attempt (`occurred_at`), so a device that
    /// registered its token again after the push failed is not deleted for it.
    static func pruneRequest(from body: [UInt8]) -> PruneRequest? {
        guard let event = try? JSONDecoder().decode(TokenInvalidEvent.self, from: Data(body)) else { return nil }
        if event.platform == .ios && event.environment == nil { return nil }
        let occurredAt = event.occurredAt.timeIntervalSince1970 > 0 ? event.occurredAt : nil
        return PruneRequest(
            appID: event.appID, platform: event.platform, environment: event.environment, token: event.token,
            invalidSince: event.invalidSince ?? occurredAt, tokenKind: event.tokenKind)
    }
}
