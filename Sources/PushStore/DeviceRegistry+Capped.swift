import PushModel

extension DeviceRegistry {
    /// The devices of these recipients registered for `app`, at most `maximumPerRecipient`
    /// each (the most recently registered tokens win), with the recipients that had more.
    ///
    /// A production provider caps fan-out per recipient: one account with thousands of
    /// registered tokens (a test rig, a leak, an attack) must not turn one notification into
    /// thousands of pushes nor grow a worker's memory. The window runs in PostgreSQL, so the
    /// extra rows never leave the server.
    public func devices(
        forRecipients recipientIDs: [String], in app: AppIdentifiers, maximumPerRecipient: Int, knownKeys: KnownPublicKeys? = nil
    ) async throws(StoreError) -> (devices: [Device], cappedRecipients: [String]) {
        guard !recipientIDs.isEmpty, app.iosBundleID != nil || app.fcmProjectID != nil else { return ([], []) }
        // `at_cap` marks the one row per recipient ranked exactly at the cap, so the
        // recipients that reached it come from the rows themselves: counting the devices per
        // recipient in a dictionary hashed each recipient id once per delivery.
        let lookup: SQLQuery = """
            SELECT \(fragment: knownKeys == nil ? Device.columns : Device.columnsWithKeyDigest),
                   d.rank = \(Int64(maximumPerRecipient)) AS at_cap FROM (
                SELECT *, row_number() OVER (PARTITION BY recipient_id ORDER BY token_registered_at DESC, id DESC) AS rank
                FROM devices
                WHERE recipient_id = ANY(\(recipientIDs))
                  AND ((platform = 'ios' AND app_id = \(app.iosBundleID)) OR (platform = 'android' AND app_id = \(app.fcmProjectID)))
            ) d
            WHERE rank <= \(Int64(maximumPerRecipient))
            """
        let result = try await pool.query(lookup.prepared)
        var full: [String] = []
        let devices: [Device]
        if let knownKeys {
            devices = try await self.devices(keyedByDigest: result, knownKeys: knownKeys, extraColumns: 1, in: app) { row, device throws(StoreError) in
                if try row.decode(Bool.self, column: Device.columnCount + 1) { full.append(device.recipientID) }
            }
        } else {
            devices = try result.map { row throws(StoreError) in
                let device = try Device(row: row, extraColumns: 1)
                if try row.decode(Bool.self, column: Device.columnCount) { full.append(device.recipientID) }
                return device
            }
        }
        // Only when some recipient reached the cap: were there more?
        guard !full.isEmpty else { return (devices, []) }
        let capped = try await pool.query("""
            SELECT recipient_id FROM devices
            WHERE recipient_id = ANY(\(full))
              AND ((platform = 'ios' AND app_id = \(app.iosBundleID)) OR (platform = 'android' AND app_id = \(app.fcmProjectID)))
            GROUP BY recipient_id HAVING count(*) > \(Int64(maximumPerRecipient))
            ORDER BY recipient_id
            """).map { row throws(StoreError) in try row.decode(String.self, column: 0) }
        return (devices, capped)
    }
}
