import Foundation

/// Which push service delivers to a device.
public enum Platform: String, Sendable, Hashable, CaseIterable, Codable {
    /// APNs.
    case ios
    /// FCM.
    case android
}

/// The APNs environment a token belongs to. Android devices are always `production`.
public enum PushEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case sandbox
    case production
}

/// One row of `devices`: a push token and what is needed to encrypt for it.
///
/// A class of constants rather than a struct: a delivery copies its device several times
/// (into its task, its result, the job's report), and a copy of the struct was a retain of
/// each of its six strings; a copy of this is one. Equality and hashing are still by value.
public final class Device: Sendable, Hashable {
    /// `devices.id`: what jobs address with `recipients.device_ids`.
    public let id: Int64
    public let recipientID: String
    public let platform: Platform
    /// The iOS bundle id (the `apns-topic`) or the Firebase project id.
    public let appID: String
    public let environment: PushEnvironment
    /// The APNs device token (lower-case hex) or FCM registration token. Never log it whole
    /// (`Redact.token`).
    public let token: String
    /// The RSA public key exactly as the device registered it; nil for a legacy app without
    /// end-to-end encryption, which only receives the fallback text.
    public let publicKey: String?
    /// Names `publicKey` in envelopes (`kid`); nil iff `publicKey` is nil.
    public let keyID: String?
    /// This very key text passed the full key check in some worker before (its digest is
    /// in `pushd_public_key_checks`), so OpenSSL's public-key check need not run again.
    public let publicKeyChecked: Bool
    /// The key's text came from the caller's own cache of parsed keys (`KnownPublicKeys` in
    /// PushStore) instead of the row: a text that cache has parsed already, as a key or as a
    /// refusal, so sealing finds it there and runs no check. Such a row says nothing of
    /// `pushd_public_key_checks` (`publicKeyChecked` is false there). It only decides where
    /// sealing runs; it must never stand in for `publicKeyChecked` as a key cache's
    /// `checkedBefore`: a refused text evicted in between would then be parsed without the
    /// check that refused it.
    public let publicKeyFromCallersCache: Bool
    public let keyRegisteredAt: Date?
    /// The last (re-)registration of the token: APNs's 410 `timestamp` only invalidates a
    /// token registered before it.
    public let tokenRegisteredAt: Date
    public let appVersion: String?

    public init(
        id: Int64, recipientID: String, platform: Platform, appID: String, environment: PushEnvironment,
        token: String, publicKey: String?, keyID: String?, keyRegisteredAt: Date?, tokenRegisteredAt: Date,
        appVersion: String?, publicKeyChecked: Bool = false, publicKeyFromCallersCache: Bool = false
    ) {
        self.id = id
        self.recipientID = recipientID
        self.platform = platform
        self.appID = appID
        self.environment = environment
        self.token = token
        self.publicKey = publicKey
        self.keyID = keyID
        self.publicKeyChecked = publicKey != nil && publicKeyChecked
        self.publicKeyFromCallersCache = publicKey != nil && publicKeyFromCallersCache
        self.keyRegisteredAt = keyRegisteredAt
        self.tokenRegisteredAt = tokenRegisteredAt
        self.appVersion = appVersion
    }

    /// Whether sealing for this device may run OpenSSL's full public-key check (4-7 ms, once
    /// per key text in the cluster): its key is neither recorded as checked nor one the
    /// caller's cache held. The worker seals those where a long stall holds no connection.
    public var publicKeyMayNeedFullCheck: Bool {
        publicKey != nil && !publicKeyChecked && !publicKeyFromCallersCache
    }

    public static func == (lhs: Device, rhs: Device) -> Bool {
        lhs === rhs
            || (lhs.id == rhs.id && lhs.recipientID == rhs.recipientID && lhs.platform == rhs.platform && lhs.appID == rhs.appID
                && lhs.environment == rhs.environment && lhs.token == rhs.token && lhs.publicKey == rhs.publicKey
                && lhs.keyID == rhs.keyID && lhs.keyRegisteredAt == rhs.keyRegisteredAt
                && lhs.tokenRegisteredAt == rhs.tokenRegisteredAt && lhs.appVersion == rhs.appVersion)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(recipientID)
        hasher.combine(platform)
        hasher.combine(appID)
        hasher.combine(environment)
        hasher.combine(token)
        hasher.combine(publicKey)
        hasher.combine(keyID)
        hasher.combine(keyRegisteredAt)
        hasher.combine(tokenRegisteredAt)
        hasher.combine(appVersion)
    }
}

/// The app a job is for, per platform, as the job names it (`app.ios_bundle_id`,
/// `app.fcm_project_id`). Devices of a platform without an id here are not selected.
public struct AppIdentifiers: Sendable, Hashable {
    public var iosBundleID: String?
    public var fcmProjectID: String?

    public init(iosBundleID: String? = nil, fcmProjectID: String? = nil) {
        self.iosBundleID = iosBundleID
        self.fcmProjectID = fcmProjectID
    }
}
