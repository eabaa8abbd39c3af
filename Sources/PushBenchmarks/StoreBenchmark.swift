import Foundation
import PushModel
import PushCommandLine
import PushCrypto
import PushRuntime
import PushStore

/// `pushd bench store`: how fast the worker can resolve recipients to devices, beside what
/// PostgreSQL itself does for simple selects (`pgbench -S`) on the same server.
///
/// It seeds its own devices under app ids unique to the run (registered through
/// `pushd_register_device`, so registration is measured too), and deletes them afterwards,
/// also when it fails; pgbench gets its own scratch database, dropped afterwards.
enum StoreBenchmark {
    static let batchSizes = [1, 100, 1000]

    struct Options {
        var devices: Int
        var seconds: Double
        var concurrency: Int
    }

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["devices", "seconds", "concurrency", "database-url"])
        let options = Options(
            // Enough rows that a 1,000-recipient batch is a small share of the table, as in
            // production, so the planner takes the index as it would there.
            devices: try parsed.integer("devices", default: 50_000, minimum: 2),
            seconds: try parsed.double("seconds", default: 3),
            concurrency: try parsed.integer("concurrency", default: 4))
        var configuration = try parsed.storeConfiguration()
        configuration.poolSize = options.concurrency
        let pool = ConnectionPool(configuration: configuration, logger: Logger(label: "pushd.bench", minimumLevel: .warning))
        let run = String(UInt32.random(in: .min ... .max), radix: 16)
        let app = AppIdentifiers(iosBundleID: "com.pushd.bench.r\(run)", fcmProjectID: "pushd-bench-\(run)")

        let outcome: Result<Void, StoreError> = await measure(pool: pool, app: app, run: run, options: options)
        let cleanup: Result<Void, StoreError> = await deleteDevices(of: app, pool: pool)
        var pgbenchLines: [String] = []
        if case .success = outcome {
            pgbenchLines = await PGBench.compare(pool: pool, run: run, seconds: options.seconds, clients: options.concurrency)
        }
        await pool.shutdown()
        if case .failure(let error) = outcome { throw .failure(explain(error)) }
        if case .failure(let error) = cleanup {
            throw .failure("benchmark devices of \(app) could not be deleted: \(error)")
        }
        pgbenchLines.forEach { print($0) }
    }

    private static func measure(pool: ConnectionPool, app: AppIdentifiers, run: String, options: Options) async -> Result<Void, StoreError> {
        let registry = DeviceRegistry(pool: pool)
        do throws(StoreError) {
            let version = try await pool.query("SELECT current_setting('server_version')").singleRow().decode(String.self, column: 0)
            let recipients = (0..<(options.devices / 2)).map { "bench-user-\(run)-\($0)" }
            print("bench store: PostgreSQL \(version) at \(pool.configuration.redactedDescription)")
            print("  \(recipients.count * 2) devices (\(recipients.count) recipients × iOS + Android), \(options.concurrency) connections, \(options.seconds) s per figure")

            let key = try publicKeyPEM()
            var registrations: [DeviceRegistration] = []
            for (index, recipient) in recipients.enumerated() {
                registrations += seedRegistrations(recipient: recipient, index: index, run: run, app: app, key: key)
            }
            let registerRate = try await concurrently(registrations, concurrency: options.concurrency) { registration throws(StoreError) in
                _ = try await registry.register(registration)
            }
            print(String(format: "  register (pushd_register_device)   : %10.0f registrations/s", registerRate))
            // Steady state, as autovacuum would leave it after a bulk load: without fresh
            // statistics the planner takes the new app ids for rare and scans by app, not by
            // recipient (measured: 4.5 ms instead of 0.7 ms for 100 recipients).
            _ = try await pool.query("ANALYZE devices")

            for batch in batchSizes where batch <= recipients.count {
                let figures = try await lookups(registry: registry, app: app, recipients: recipients, batch: batch, options: options)
                print(String(
                    format: "  lookup, batch of %4d recipients    : %10.0f devices/s  (%8.0f lookups/s, p50 %6.2f ms, p99 %6.2f ms)",
                    batch, figures.devicesPerSecond, figures.lookupsPerSecond, figures.p50, figures.p99))
            }
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    private static func publicKeyPEM() throws(StoreError) -> String {
        do {
            return try DevicePrivateKey.generate().publicKey.pem
        } catch {
            throw .unexpectedResult("cannot generate a benchmark key: \(error)")
        }
    }

    private static func seedRegistrations(
        recipient: String, index: Int, run: String, app: AppIdentifiers, key: String
    ) -> [DeviceRegistration] {
        let hexIndex = String(index, radix: 16)
        let apnsToken = run + String(repeating: "0", count: max(0, 56 - hexIndex.count)) + hexIndex
        return [
            DeviceRegistration(
                recipientID: recipient, platform: .ios, appID: app.iosBundleID ?? "", environment: .production,
                token: apnsToken, publicKey: key, appVersion: "bench"),
            DeviceRegistration(
                recipientID: recipient, platform: .android, appID: app.fcmProjectID ?? "", environment: nil,
                token: "bench:\(run):\(index)", publicKey: key, appVersion: "bench"),
        ]
    }

    private static func deleteDevices(of app: AppIdentifiers, pool: ConnectionPool) async -> Result<Void, StoreError> {
        let appIDs = [app.iosBundleID, app.fcmProjectID].compactMap { $0 }
        do throws(StoreError) {
            _ = try await pool.query("DELETE FROM devices WHERE app_id = ANY(\(appIDs))")
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    private static func explain(_ error: StoreError) -> String {
        if let state = error.sqlState, ["42P01", "42883"].contains(state) {
            return "\(error) — the database has no pushd schema yet: run `pushd migrate` first"
        }
        return error.description
    }
}
