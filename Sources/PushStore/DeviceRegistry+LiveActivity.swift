import Foundation
import PushModel

/// One iOS device a Live Activity job addresses, with its token of the needed kind
/// (`pushd_live_activity_targets`).
public struct LiveActivityTarget: Sendable, Hashable {
    public let deviceID: Int64
    public let recipientID: String
    public let environment: PushEnvironment
    /// nil: the device has no token of that kind (no push-to-start token, or no update token
    /// for the activity): nothing can be sent to it.
    public let token: String?
    public let tokenRegisteredAt: Date?
    /// nil: no end-to-end key (legacy app): the device gets the clear layout only.
    public let publicKey: String?
    public let keyID: String?
    /// The key text passed the full key check before (`pushd_public_key_checks`).
    public let publicKeyChecked: Bool

    public init(
        deviceID: Int64, recipientID: String, environment: PushEnvironment, token: String?, tokenRegisteredAt: Date?,
        publicKey: String?, keyID: String?, publicKeyChecked: Bool = false
    ) {
        self.deviceID = deviceID
        self.recipientID = recipientID
        self.environment = environment
        self.token = token
        self.tokenRegisteredAt = tokenRegisteredAt
        self.publicKey = publicKey
        self.keyID = keyID
        self.publicKeyChecked = publicKey != nil && publicKeyChecked
    }
}

/// What registering a Live Activity token did.
public struct LiveActivityTokenOutcome: Sendable, Hashable {
    public let deviceID: Int64
    /// A different token was replaced.
    public let replaced: Bool
    /// The device's first token of this kind (for this activity).
    public let created: Bool
}

extension DeviceRegistry {
    /// The iOS devices of `app` a Live Activity job addresses (exactly one of `recipientIDs`
    /// and `deviceIDs`), each with its token of `kind`, in one round trip.
    public func liveActivityTargets(
        appID: String, kind: LiveActivity.TokenKind, activityID: String?, recipientIDs: [String]? = nil, deviceIDs: [Int64]? = nil
    ) async throws(StoreError) -> [LiveActivityTarget] {
        let result = try await pool.query("""
            SELECT d.device_id, d.recipient_id, d.environment, d.token, d.token_registered_at, d.public_key, d.key_id,
                   \(fragment: Device.publicKeyCheckedColumn)
            FROM pushd_live_activity_targets(\(appID), \(kind.rawValue), \(activityID), \(recipientIDs), \(deviceIDs)) d
            """)
        return try result.map { row throws(StoreError) in
            let (deviceID, recipientID, environment, token, registeredAt, publicKey, keyID, checked) =
                try row.decode((Int64, String, PushEnvironment, String?, Date?, String?, String?, Bool).self)
            return LiveActivityTarget(
                deviceID: deviceID, recipientID: recipientID, environment: environment, token: token,
                tokenRegisteredAt: registeredAt, publicKey: publicKey, keyID: keyID, publicKeyChecked: checked)
        }
    }

    /// `pushd_register_push_to_start_token`: the device is named by its APNs device token.
    /// An unknown device is `StoreError.server` with SQLSTATE P0002.
    public func registerPushToStartToken(
        appID: String, environment: PushEnvironment, deviceToken: String, token: String
    ) async throws(StoreError) -> LiveActivityTokenOutcome {
        let row = try await pool.query("""
            SELECT device_id, replaced, created
            FROM pushd_register_push_to_start_token(\(appID), \(environment), \(deviceToken), \(token))
            """).singleRow()
        let (deviceID, replaced, created) = try row.decode((Int64, Bool, Bool).self)
        return LiveActivityTokenOutcome(deviceID: deviceID, replaced: replaced, created: created)
    }

    /// `pushd_register_activity_token`: the update token of one running activity.
    public func registerActivityToken(
        appID: String, environment: PushEnvironment, deviceToken: String, activityID: String, token: String
    ) async throws(StoreError) -> LiveActivityTokenOutcome {
        let row = try await pool.query("""
            SELECT device_id, replaced, created
            FROM pushd_register_activity_token(\(appID), \(environment), \(deviceToken), \(activityID), \(token))
            """).singleRow()
        let (deviceID, replaced, created) = try row.decode((Int64, Bool, Bool).self)
        return LiveActivityTokenOutcome(deviceID: deviceID, replaced: replaced, created: created)
    }

    /// `pushd_end_activity`: deletes the activity's update tokens (on `deviceIDs` only, or on
    /// every device of the app when nil). Returns how many were deleted.
    public func endActivity(appID: String, activityID: String, deviceIDs: [Int64]?) async throws(StoreError) -> Int {
        let row = try await pool.query("SELECT pushd_end_activity(\(appID), \(activityID), \(deviceIDs))").singleRow()
        return Int(try row.decode(Int32.self, column: 0))
    }

    /// `pruneBatch` for requests of any token kind: device tokens through `pushd_prune_token`,
    /// Live Activity tokens through `pushd_prune_live_activity_token`. Results in the order of
    /// `requests`.
    public func pruneAll(_ requests: [PruneRequest]) async throws(StoreError) -> [Bool] {
        let deviceIndices = requests.indices.filter { requests[$0].tokenKind == nil }
        let activityIndices = requests.indices.filter { requests[$0].tokenKind != nil }
        var pruned = [Bool](repeating: false, count: requests.count)
        for (index, deleted) in zip(deviceIndices, try await pruneBatch(deviceIndices.map { requests[$0] })) {
            pruned[index] = deleted
        }
        guard !activityIndices.isEmpty else { return pruned }
        // Sorted like pruneBatch, so concurrent batches take row locks in the same order.
        let order = activityIndices.sorted { lhs, rhs in
            (requests[lhs].appID, requests[lhs].token, lhs) < (requests[rhs].appID, requests[rhs].token, rhs)
        }
        let sorted = order.map { requests[$0] }
        let result = try await pool.query("""
            SELECT u.n, pushd_prune_live_activity_token(u.app_id, u.environment, u.kind, u.token, u.invalid_since)
            FROM unnest(\(sorted.map(\.appID)), \(sorted.map { ($0.environment ?? .production).rawValue }),
                        \(sorted.map { $0.tokenKind?.rawValue ?? "" }), \(sorted.map(\.token)), \(sorted.map(\.invalidSince)))
                 WITH ORDINALITY AS u(app_id, environment, kind, token, invalid_since, n)
            ORDER BY u.n
            """)
        guard result.count == sorted.count else {
            throw .unexpectedResult("pruned \(result.count) Live Activity tokens of \(sorted.count)")
        }
        for row in result {
            let (position, deleted) = try row.decode((Int64, Bool).self)
            guard position >= 1, position <= order.count else { throw .unexpectedResult("ordinal \(position) out of range") }
            pruned[order[Int(position) - 1]] = deleted
        }
        return pruned
    }
}
