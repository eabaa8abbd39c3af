import Foundation
import PushCrypto
import PushModel
import PushStore
import PushTestSupport
import Testing

@Suite("pushd device register")
struct DeviceCommandTests {
    @Test("registers, rotates, and refuses a bad key with the crypto module's message")
    func registerFromCommandLine() async throws {
        try await TestDatabase.withScratchDatabase(migrated: true) { configuration in
            let directory = try BuildProducts.temporaryDirectory("device-cli")
            defer { try? FileManager.default.removeItem(at: directory) }
            let first = directory.appendingPathComponent("first.pub"), second = directory.appendingPathComponent("second.pub")
            let bad = directory.appendingPathComponent("bad.pub")
            try TestKeys.first.write(to: first, atomically: true, encoding: .utf8)
            try TestKeys.third.write(to: second, atomically: true, encoding: .utf8)
            try TestKeys.rsa1024.write(to: bad, atomically: true, encoding: .utf8)
            let environment = TestDatabase.childEnvironment(for: configuration)
            let token = TestKeys.apnsToken()
            func register(_ key: URL) async throws -> ToolResult {
                try await runTool(BuildProducts.pushd, [
                    "device", "register", "--recipient", "cli-user", "--platform", "ios", "--app", "com.example.cli",
                    "--environment", "sandbox", "--token", token, "--public-key-file", key.path, "--app-version", "3.0",
                ], environment: environment)
            }
            let created = try await register(first)
            #expect(created.status == 0, "\(created.errors)")
            let fields = Dictionary(uniqueKeysWithValues: created.output.split(whereSeparator: \.isWhitespace).compactMap { pair -> (String, String)? in
                let parts = pair.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            })
            #expect(fields["created"] == "true")
            #expect(fields["key_rotated"] == "false")
            #expect(fields["key_id"]?.count == 16)
            #expect(Int64(fields["device_id"] ?? "") != nil)

            let rotated = try await register(second)
            #expect(rotated.status == 0)
            #expect(rotated.output.contains("key_rotated=true created=false"))
            #expect(rotated.output.contains("device_id=\(fields["device_id"] ?? "?") "))

            let refused = try await register(bad)
            #expect(refused.status == 1)
            #expect(refused.errors.contains(PublicKeyError.tooSmall(bits: 1024).description))

            // Both keys passed the full check here, so both texts are recorded as checked:
            // the device's current (rotated) key is reported so to the workers.
            let pool = ConnectionPool(configuration: configuration)
            let looked: Result<((Int64, Int64, Int64, Int64), [Device]), StoreError>
            do throws(StoreError) {
                let recorded = try await pool.query("""
                    SELECT count(*) FILTER (WHERE digest = \(Data(DevicePublicKey.checkDigest(ofKeyText: TestKeys.first)))),
                           count(*) FILTER (WHERE digest = \(Data(DevicePublicKey.checkDigest(ofKeyText: TestKeys.third)))),
                           count(*) FILTER (WHERE digest = \(Data(DevicePublicKey.checkDigest(ofKeyText: TestKeys.rsa1024)))),
                           count(*)
                    FROM pushd_public_key_checks
                    """).singleRow().decode((Int64, Int64, Int64, Int64).self)
                let devices = try await DeviceRegistry(pool: pool).devices(
                    forRecipients: ["cli-user"], in: AppIdentifiers(iosBundleID: "com.example.cli"))
                looked = .success((recorded, devices))
            } catch {
                looked = .failure(error)
            }
            await pool.shutdown()
            let (recorded, devices) = try looked.get()
            #expect(recorded == (1, 1, 0, 2))
            #expect(devices.map(\.publicKeyChecked) == [true])
        }
    }

    @Test("without --database-url or PUSHD_DATABASE_URL, the database comes from the workers' configuration file (--config or PUSHD_CONFIG)")
    func databaseFromConfigFile() async throws {
        try await TestDatabase.withScratchDatabase(migrated: true) { configuration in
            let directory = try BuildProducts.temporaryDirectory("device-cli-config")
            defer { try? FileManager.default.removeItem(at: directory) }
            var environment = TestDatabase.childEnvironment(for: configuration)
            let url = try #require(environment["PUSHD_DATABASE_URL"])
            let config = directory.appendingPathComponent("pushd.json")
            try JSONSerialization.data(withJSONObject: ["database_url": url]).write(to: config)
            environment["PUSHD_DATABASE_URL"] = ""
            let arguments = ["device", "register", "--recipient", "cfg-user", "--platform", "android", "--app", "cfg-project",
                             "--token", "fcm-config-token"]
            let withOption = try await runTool(BuildProducts.pushd, arguments + ["--config", config.path], environment: environment)
            #expect(withOption.status == 0, "\(withOption.errors)")
            environment["PUSHD_CONFIG"] = config.path
            let withVariable = try await runTool(BuildProducts.pushd, arguments, environment: environment)
            #expect(withVariable.status == 0, "\(withVariable.errors)")
            #expect(withVariable.output.contains("created=false"), "the same device, found through the same database")
            environment["PUSHD_CONFIG"] = ""
            let without = try await runTool(BuildProducts.pushd, arguments, environment: environment)
            #expect(without.status != 0, "no database anywhere: a usage error")
        }
    }
}
