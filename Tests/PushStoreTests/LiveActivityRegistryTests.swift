import Foundation
import PushModel
import PushStore
import Testing

/// Live Activity tokens through the SQL functions from Swift: registration, the worker's
/// lookup, ending an activity, pruning with the 410 rule. In a migrated database of its own.
@Suite("Live Activity registry", .migratedScratchDatabase)
struct LiveActivityRegistryTests {
    let fixture: RegistryFixture
    let app: String

    init() throws {
        fixture = try RegistryFixture.get()
        app = "com.example.\(TestDatabase.uniqueName("la"))"
    }

    private var registry: DeviceRegistry { fixture.registry }

    private func device(_ user: String, key: String? = TestKeys.first) async throws -> (id: Int64, token: String) {
        let token = TestKeys.apnsToken()
        let outcome = try await registry.register(DeviceRegistration(
            recipientID: user, platform: .ios, appID: app, environment: .production, token: token, publicKey: key))
        return (outcome.deviceID, token)
    }

    @Test("push-to-start and activity tokens are found by recipient or device id; absent ones come back nil")
    func targets() async throws {
        let user = TestDatabase.uniqueName("u")
        let keyed = try await device(user)
        let legacy = try await device(user, key: nil)
        let start = TestKeys.apnsToken()
        let first = try await registry.registerPushToStartToken(appID: app, environment: .production, deviceToken: keyed.token, token: start)
        #expect(first.deviceID == keyed.id && first.created && !first.replaced)
        let again = try await registry.registerPushToStartToken(
            appID: app, environment: .production, deviceToken: keyed.token.uppercased(), token: TestKeys.apnsToken())
        #expect(again.replaced && !again.created)

        let update = TestKeys.apnsToken()
        _ = try await registry.registerActivityToken(
            appID: app, environment: .production, deviceToken: legacy.token, activityID: "meeting-1", token: update)

        let starts = try await registry.liveActivityTargets(appID: app, kind: .pushToStart, activityID: nil, recipientIDs: [user])
        #expect(starts.map(\.deviceID) == [keyed.id, legacy.id])
        #expect(starts[0].token != nil && starts[0].publicKey == TestKeys.first && starts[0].keyID != nil)
        #expect(starts[1].token == nil && starts[1].publicKey == nil)

        let updates = try await registry.liveActivityTargets(
            appID: app, kind: .activityUpdate, activityID: "meeting-1", deviceIDs: [keyed.id, legacy.id])
        #expect(updates.map(\.token) == [nil, update])

        #expect(try await registry.endActivity(appID: app, activityID: "meeting-1", deviceIDs: [keyed.id]) == 0)
        #expect(try await registry.endActivity(appID: app, activityID: "meeting-1", deviceIDs: nil) == 1)
        let after = try await registry.liveActivityTargets(appID: app, kind: .activityUpdate, activityID: "meeting-1", recipientIDs: [user])
        #expect(after.allSatisfy { $0.token == nil })
    }

    @Test("an unknown device is refused with P0002")
    func unknownDevice() async throws {
        let error = await #expect(throws: StoreError.self) {
            _ = try await registry.registerPushToStartToken(
                appID: app, environment: .production, deviceToken: TestKeys.apnsToken(), token: TestKeys.apnsToken())
        }
        #expect(error?.description.contains("register the device first") == true)
    }

    @Test("pruning Live Activity tokens honours the 410 timestamp and never deletes the device; mixed batches keep their order")
    func prune() async throws {
        let user = TestDatabase.uniqueName("u")
        let phone = try await device(user)
        let start = TestKeys.apnsToken(), update = TestKeys.apnsToken()
        _ = try await registry.registerPushToStartToken(appID: app, environment: .production, deviceToken: phone.token, token: start)
        _ = try await registry.registerActivityToken(
            appID: app, environment: .production, deviceToken: phone.token, activityID: "m-2", token: update)
        let old = Date(timeIntervalSince1970: 1_700_000_000)
        let results = try await registry.pruneAll([
            PruneRequest(appID: app, platform: .ios, environment: .production, token: start, invalidSince: old, tokenKind: .pushToStart),
            PruneRequest(appID: app, platform: .ios, environment: .production, token: TestKeys.apnsToken(), invalidSince: nil),
            PruneRequest(appID: app, platform: .ios, environment: .production, token: update, invalidSince: nil, tokenKind: .activityUpdate),
        ])
        #expect(results == [false, false, true], "registered after the 410 timestamp: kept; unknown device token: nothing; no timestamp: pruned")
        let devices = try await registry.devices(ids: [phone.id])
        #expect(devices.count == 1, "the device itself stays")
        let starts = try await registry.liveActivityTargets(appID: app, kind: .pushToStart, activityID: nil, deviceIDs: [phone.id])
        #expect(starts.first?.token == start)
    }
}
