import Foundation
import PushModel

/// A device registering (or re-registering) its token and key: the arguments of
/// `pushd_register_device`.
///
/// The store does not parse keys (it does not link the crypto module): the caller that
/// registers checks the key first with `DevicePublicKey(parsing:)`, as `pushd device
/// register` does, so a key the worker could not encrypt for never reaches the database.
/// The key is stored exactly as sent (its `key_id` is a hash of that text).
public struct DeviceRegistration: Sendable, Hashable {
    public let recipientID: String
    public let platform: Platform
    public let appID: String
    /// nil means `production` for Android; iOS devices must say which APNs environment.
    public let environment: PushEnvironment?
    public let token: String
    public let publicKey: String?
    public let appVersion: String?

    public init(
        recipientID: String, platform: Platform, appID: String, environment: PushEnvironment?, token: String,
        publicKey: String?, appVersion: String? = nil
    ) {
        self.recipientID = recipientID
        self.platform = platform
        self.appID = appID
        self.environment = environment
        self.token = token
        self.publicKey = publicKey
        self.appVersion = appVersion
    }
}

/// What `pushd_register_device` did.
public struct RegistrationOutcome: Sendable, Hashable {
    public let deviceID: Int64
    /// nil for a device without a key.
    public let keyID: String?
    /// An existing device's key changed (including to or from no key).
    public let keyRotated: Bool
    /// The token was new: a device row was created.
    public let created: Bool
}

/// A provider said a token is dead: the arguments of `pushd_prune_token`.
public struct PruneRequest: Sendable, Hashable {
    public let appID: String
    public let platform: Platform
    /// nil means `production` for Android.
    public let environment: PushEnvironment?
    public let token: String
    /// APNs's 410 `timestamp`: only a token last registered before it is deleted. nil (FCM
    /// `UNREGISTERED`, APNs `BadDeviceToken`) deletes unconditionally.
    public let invalidSince: Date?
    /// nil: the device's own token (`pushd_prune_token`); else a Live Activity token
    /// (`pushd_prune_live_activity_token`), which never deletes the device.
    public let tokenKind: LiveActivity.TokenKind?

    public init(
        appID: String, platform: Platform, environment: PushEnvironment?, token: String, invalidSince: Date?,
        tokenKind: LiveActivity.TokenKind? = nil
    ) {
        self.appID = appID
        self.platform = platform
        self.environment = environment
        self.token = token
        self.invalidSince = invalidSince
        self.tokenKind = tokenKind
    }
}
