import Foundation
import PushCrypto
import PushModel
import PushStore
import Testing

/// Keys that passed the full check are recorded by digest (`0007_public_key_checks.sql`) and
/// every device lookup says whether the row's current key text is one of them.
@Suite("Recorded key checks", .migratedScratchDatabase)
struct PublicKeyCheckRecordTests {
    let fixture: RegistryFixture
    let app: AppIdentifiers

    init() throws {
        fixture = try RegistryFixture.get()
        let suffix = TestDatabase.uniqueName("k")
        app = AppIdentifiers(iosBundleID: "com.example.\(suffix)", fcmProjectID: "example-\(suffix)")
    }

    private var registry: DeviceRegistry { fixture.registry }

    /// Whether each lookup the worker uses reports the device's key as checked.
    private func checkedByEveryLookup(_ recipient: String, _ deviceID: Int64) async throws -> [Bool] {
        let plain = try await registry.devices(forRecipients: [recipient], in: app)
        let capped = try await registry.devices(forRecipients: [recipient], in: app, maximumPerRecipient: 5).devices
        let byID = try await registry.devices(ids: [deviceID], in: app)
        return (plain + capped + byID).map(\.publicKeyChecked)
    }

    @Test("a recorded key text is reported checked by every lookup; a rotated key is not")
    func recordedKey() async throws {
        let recipient = TestDatabase.uniqueName("checked")
        // The registry stores key texts as they come (parsing is the caller's): unique texts
        // keep this test apart from every other one in the database.
        let key = "MIIBCgKCAQEA" + TestDatabase.uniqueName("key")
        let registration = DeviceRegistration(
            recipientID: recipient, platform: .android, appID: app.fcmProjectID ?? "", environment: nil,
            token: "fcm:" + recipient, publicKey: key)
        let device = try await registry.register(registration).deviceID
        #expect(try await checkedByEveryLookup(recipient, device) == [false, false, false])

        try await registry.recordPublicKeyChecks([DevicePublicKey.checkDigest(ofKeyText: key), DevicePublicKey.checkDigest(ofKeyText: key)])
        #expect(try await checkedByEveryLookup(recipient, device) == [true, true, true])

        let rotated = DeviceRegistration(
            recipientID: recipient, platform: .android, appID: app.fcmProjectID ?? "", environment: nil,
            token: "fcm:" + recipient, publicKey: key + "rotated")
        #expect(try await registry.register(rotated).keyRotated)
        #expect(try await checkedByEveryLookup(recipient, device) == [false, false, false])
    }

    @Test("the Live Activity lookup reports a recorded key too")
    func liveActivityTargets() async throws {
        let recipient = TestDatabase.uniqueName("activity")
        let key = "MIIBCgKCAQEA" + TestDatabase.uniqueName("key")
        let token = String((Digest.sha256Hex(recipient) + String(repeating: "0", count: 64)).prefix(64))
        let bundle = app.iosBundleID ?? ""
        _ = try await registry.register(DeviceRegistration(
            recipientID: recipient, platform: .ios, appID: bundle, environment: .production, token: token, publicKey: key))
        _ = try await registry.registerPushToStartToken(appID: bundle, environment: .production, deviceToken: token, token: "cafe")
        func checked() async throws -> [Bool] {
            try await registry.liveActivityTargets(appID: bundle, kind: .pushToStart, activityID: nil, recipientIDs: [recipient])
                .map(\.publicKeyChecked)
        }
        #expect(try await checked() == [false])
        try await registry.recordPublicKeyChecks([DevicePublicKey.checkDigest(ofKeyText: key)])
        #expect(try await checked() == [true])
    }

    @Test("a device without a key is never reported checked")
    func keylessDevice() async throws {
        let recipient = TestDatabase.uniqueName("legacy")
        let device = try await registry.register(DeviceRegistration(
            recipientID: recipient, platform: .android, appID: app.fcmProjectID ?? "", environment: nil,
            token: "fcm:" + recipient, publicKey: nil)).deviceID
        #expect(try await checkedByEveryLookup(recipient, device) == [false, false, false])
    }

    @Test("a digest that is not 32 bytes is refused by the table (SQLSTATE 23514)")
    func wrongLength() async throws {
        let error = await #expect(throws: StoreError.self) {
            try await registry.recordPublicKeyChecks([[UInt8](repeating: 7, count: 31)])
        }
        #expect(error?.sqlState == "23514")
    }
}
