import PushModel

extension DeviceRegistry {
    /// Moves an iOS device to the APNs environment its token was accepted in, after its
    /// registered one answered `BadDeviceToken`. Returns false when nothing changed (the
    /// device is gone, or the same token is already registered in that environment).
    public func correctEnvironment(deviceID: Int64, to environment: PushEnvironment) async throws(StoreError) -> Bool {
        try await pool.query("""
            UPDATE devices d SET environment = \(environment)
            WHERE d.id = \(deviceID) AND d.platform = 'ios' AND d.environment <> \(environment)
              AND NOT EXISTS (
                  SELECT 1 FROM devices o
                  WHERE o.app_id = d.app_id AND o.platform = d.platform AND o.environment = \(environment)
                    AND o.push_token = d.push_token)
            RETURNING d.id
            """).count == 1
    }
}
