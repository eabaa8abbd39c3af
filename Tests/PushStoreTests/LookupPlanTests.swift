import Foundation
import PushModel
import PushStore
import Testing

/// The plan PostgreSQL keeps for a prepared device lookup. From its sixth execution a
/// prepared statement may run on a generic plan, made without the parameters' values; if
/// that plan scanned the whole table, preparing (done to save the planning) would make every
/// job's lookup cost a sequential scan of `devices` instead. So the generic plan is checked
/// here, forced, on a table large enough for the planner to care.
@Suite("Device lookup plans", .migratedScratchDatabase)
struct LookupPlanTests {
    @Test("the capped recipient lookup, prepared, keeps to a recipient index in its generic plan on 20,000 devices")
    func genericPlanUsesAnIndex() async throws {
        let fixture = try RegistryFixture.get()
        let suffix = TestDatabase.uniqueName("plan")
        let app = AppIdentifiers(iosBundleID: "com.example.\(suffix)", fcmProjectID: "example-\(suffix)")
        // 10,000 recipients with an iOS and an Android device each.
        _ = try await fixture.pool.query("""
            INSERT INTO devices (recipient_id, platform, app_id, environment, push_token, token_registered_at)
            SELECT \(suffix) || '-' || n, p.platform,
                   CASE p.platform WHEN 'ios' THEN \(app.iosBundleID) ELSE \(app.fcmProjectID) END, 'production',
                   CASE p.platform WHEN 'ios' THEN md5(\(suffix) || n) ELSE 'fcm-' || md5(\(suffix) || n) END, now()
            FROM generate_series(1, 10000) AS n, (VALUES ('ios'), ('android')) AS p(platform)
            """)
        _ = try await fixture.pool.query("ANALYZE devices")

        // One session, so the statement the registry prepares is the one explained. The rows
        // go with the suite's scratch database.
        var configuration = fixture.configuration
        configuration.poolSize = 1
        let recipients = (1...50).map { "\(suffix)-\($0)" }
        let (devices, plan) = try await TestDatabase.withPool(configuration) { pool in
            _ = try await pool.query("SET plan_cache_mode = force_generic_plan")
            let (devices, _) = try await DeviceRegistry(pool: pool).devices(
                forRecipients: recipients, in: app, maximumPerRecipient: 20)
            let name = try await pool.query("""
                SELECT name FROM pg_prepared_statements WHERE NOT from_sql AND statement LIKE '%row_number() OVER%'
                """).singleRow().decode(String.self, column: 0)
            // EXPLAIN EXECUTE takes no bind parameters: a function of the session spells the
            // values out as literals, in the statement's order (the cap marks the rows at it,
            // then come the recipients, the two app ids and the cap again).
            _ = try await pool.query("""
                CREATE FUNCTION pg_temp.explain_lookup(p_name text, p_recipients text[], p_ios text, p_fcm text, p_cap bigint)
                    RETURNS SETOF text LANGUAGE plpgsql AS $$
                BEGIN
                    RETURN QUERY EXECUTE format('EXPLAIN EXECUTE %I(%s, %L, %L, %L, %s)', p_name, p_cap, p_recipients::text, p_ios, p_fcm, p_cap);
                END
                $$
                """)
            let plan = try await pool.query("""
                SELECT * FROM pg_temp.explain_lookup(\(name), \(recipients), \(app.iosBundleID), \(app.fcmProjectID), \(Int64(20)))
                """).map { row throws(StoreError) in try row.decode(String.self, column: 0) }
            return (devices.count, plan.joined(separator: "\n"))
        }
        #expect(devices == 100)
        #expect(plan.contains("devices_recipient_idx") || plan.contains("devices_app_recipient_idx"), "\(plan)")
        #expect(!plan.contains("Seq Scan on devices"), "\(plan)")
    }
}
