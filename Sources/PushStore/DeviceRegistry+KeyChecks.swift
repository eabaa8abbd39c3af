import Foundation

extension DeviceRegistry {
    /// Records key texts that passed the full key check, by the SHA-256 of their UTF-8 bytes
    /// (`pushd_record_public_key_checks`, `Schemas/sql/0007_public_key_checks.sql`), so that the
    /// device lookup tells every worker they need no public-key check again. Idempotent; a
    /// digest that is not 32 bytes is refused by the table (SQLSTATE 23514).
    public func recordPublicKeyChecks(_ digests: [[UInt8]]) async throws(StoreError) {
        guard !digests.isEmpty else { return }
        let values = digests.map { Data($0) }
        _ = try await pool.query("SELECT pushd_record_public_key_checks(\(values))")
    }
}
