import PushModel

/// The device registry: registration, lookups for the worker, pruning for the cleanup
/// consumer. All writes go through the SQL functions of `Schemas/sql` (the same ones other
/// languages call); lookups read `devices` directly, each in one round trip.
public struct DeviceRegistry: Sendable {
    public let pool: ConnectionPool

    public init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// Registers or re-registers a token (`pushd_register_device`). Invalid arguments the
    /// database refuses (an Android device in `sandbox`, a non-hex APNs token, …) come back
    /// as `StoreError.server` with SQLSTATE `22023` and the function's message.
    public func register(_ registration: DeviceRegistration) async throws(StoreError) -> RegistrationOutcome {
        let row = try await pool.query("""
            SELECT device_id, key_id, key_rotated, created FROM pushd_register_device(
                \(registration.recipientID), \(registration.platform), \(registration.appID), \(registration.environment),
                \(registration.token), \(registration.publicKey), \(registration.appVersion))
            """).singleRow()
        let (deviceID, keyID, keyRotated, created) = try row.decode((Int64, String?, Bool, Bool).self)
        return RegistrationOutcome(deviceID: deviceID, keyID: keyID, keyRotated: keyRotated, created: created)
    }

    /// Every device of every recipient in `recipientIDs` for `app`, in one round trip however
    /// many recipients (`recipient_id = ANY($1)` with one `text[]` parameter; prepared once
    /// per connection, whose generic plan uses the `recipient_id` index). Duplicates in
    /// `recipientIDs` are harmless; the order of the devices is unspecified.
    public func devices(forRecipients recipientIDs: [String], in app: AppIdentifiers) async throws(StoreError) -> [Device] {
        guard !recipientIDs.isEmpty, app.iosBundleID != nil || app.fcmProjectID != nil else { return [] }
        let lookup: SQLQuery = """
            SELECT \(fragment: Device.columns) FROM devices d
            WHERE recipient_id = ANY(\(recipientIDs))
              AND ((platform = 'ios' AND app_id = \(app.iosBundleID)) OR (platform = 'android' AND app_id = \(app.fcmProjectID)))
            """
        return try await pool.query(lookup.prepared).map { row throws(StoreError) in try Device(row: row) }
    }

    /// The devices with these ids (a job's `recipients.device_ids`), in one round trip. With
    /// `app`, only that app's devices are returned, so a job cannot reach another app's
    /// devices by id. Unknown ids are skipped. With `knownKeys`, keys the caller holds are not
    /// sent again (`KnownPublicKeys`), and the others take one more round trip.
    public func devices(ids: [Int64], in app: AppIdentifiers? = nil, knownKeys: KnownPublicKeys? = nil) async throws(StoreError) -> [Device] {
        guard !ids.isEmpty else { return [] }
        let columns = knownKeys == nil ? Device.columns : Device.columnsWithKeyDigest
        let query: SQLQuery
        if let app {
            query = """
                SELECT \(fragment: columns) FROM devices d
                WHERE id = ANY(\(ids))
                  AND ((platform = 'ios' AND app_id = \(app.iosBundleID)) OR (platform = 'android' AND app_id = \(app.fcmProjectID)))
                """
        } else {
            query = "SELECT \(fragment: columns) FROM devices d WHERE id = ANY(\(ids))"
        }
        let result = try await pool.query(query.prepared)
        if let knownKeys { return try await devices(keyedByDigest: result, knownKeys: knownKeys, extraColumns: 0, in: app) }
        return try result.map { row throws(StoreError) in try Device(row: row) }
    }
}
