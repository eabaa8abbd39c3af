import PushModel

/// Why a device of a Live Activity job was sent nothing (`pushd_liveactivity_skipped_total`).
struct LiveActivitySkip: Sendable, Equatable {
    enum Reason: String, Sendable {
        /// An iOS device without the token the event needs: no push-to-start token for a
        /// start, no update token of that activity for an update or end.
        case noToken = "no_token"
        /// An Android device of a job without `android_fallback`.
        case android
    }

    let reason: Reason
    let event: LiveActivity.Event
}

extension TokenInvalidEvent {
    /// The event for a token of a Live Activity job: an iOS device's token there is a
    /// push-to-start or update token (pruned without the device); an Android device's is its
    /// own (the alert fallback).
    func naming(_ activity: LiveActivity?, platform: Platform) -> TokenInvalidEvent {
        guard let activity, platform == .ios else { return self }
        var event = self
        event.tokenKind = activity.tokenKind
        event.activityID = activity.tokenKind == .activityUpdate ? activity.activityID : nil
        return event
    }
}
