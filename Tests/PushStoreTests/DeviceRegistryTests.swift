import Foundation
import PushCrypto
import PushModel
import PushStore
import Synchronization
import Testing

/// Registration, rotation, lookups and pruning through the SQL functions, in a migrated
/// database of the suite's own. Tests run in parallel, each with its own ids.
@Suite("Device registry", .migratedScratchDatabase)
struct DeviceRegistryTests {
    let fixture: RegistryFixture
    let app: AppIdentifiers

    init() throws {
        fixture = try RegistryFixture.get()
        let suffix = TestDatabase.uniqueName("t")
        app = AppIdentifiers(iosBundleID: "com.example.\(suffix)", fcmProjectID: "example-\(suffix)")
    }

    private var registry: DeviceRegistry { fixture.registry }
    private var ios: String { app.iosBundleID ?? "" }
    private var android: String { app.fcmProjectID ?? "" }

    private func recipient(_ label: String = "user") -> String { TestDatabase.uniqueName(label) }

    @Test("a new device is created with its key; lookups return it field for field")
    func registerNew() async throws {
        let user = recipient()
        let token = TestKeys.apnsToken()
        let outcome = try await registry.register(DeviceRegistration(
            recipientID: user, platform: .ios, appID: ios, environment: .sandbox, token: token.uppercased(),
            publicKey: TestKeys.first, appVersion: "2.3.0"))
        #expect(outcome.created)
        #expect(!outcome.keyRotated)
        let keyID = try #require(outcome.keyID)
        let expectedKeyID = try await fixture.pool.query("SELECT pushd_key_id(\(TestKeys.first))").singleRow().decode(String.self, column: 0)
        #expect(keyID == expectedKeyID)

        let devices = try await registry.devices(forRecipients: [user], in: app)
        let device = try #require(devices.first)
        #expect(devices.count == 1)
        #expect(device.id == outcome.deviceID)
        #expect(device.recipientID == user)
        #expect(device.platform == .ios)
        #expect(device.appID == ios)
        #expect(device.environment == .sandbox)
        #expect(device.token == token, "APNs tokens are stored lower-case")
        #expect(device.publicKey == TestKeys.first)
        #expect(device.keyID == keyID)
        #expect(device.appVersion == "2.3.0")
        let keyRegisteredAt = try #require(device.keyRegisteredAt)
        #expect(abs(keyRegisteredAt.timeIntervalSince(device.tokenRegisteredAt)) < 0.001)
        #expect(abs(device.tokenRegisteredAt.timeIntervalSinceNow) < 300)
    }

    @Test("a new key for the same token rotates: same device, new key id, rotated = true")
    func rotate() async throws {
        let user = recipient()
        let token = "fcm:" + recipient("token")
        let first = try await registry.register(DeviceRegistration(
            recipientID: user, platform: .android, appID: android, environment: nil, token: token, publicKey: TestKeys.first))
        let before = try #require(try await registry.devices(ids: [first.deviceID]).first)
        let second = try await registry.register(DeviceRegistration(
            recipientID: user, platform: .android, appID: android, environment: .production, token: token, publicKey: TestKeys.second))
        #expect(second.deviceID == first.deviceID)
        #expect(!second.created)
        #expect(second.keyRotated)
        #expect(second.keyID != nil && second.keyID != first.keyID)
        let after = try #require(try await registry.devices(ids: [first.deviceID]).first)
        #expect(after.publicKey == TestKeys.second)
        #expect(after.keyID == second.keyID)
        #expect(after.environment == .production)
        #expect(try #require(after.keyRegisteredAt) > (try #require(before.keyRegisteredAt)))

        let removed = try await registry.register(DeviceRegistration(
            recipientID: user, platform: .android, appID: android, environment: nil, token: token, publicKey: nil))
        #expect(removed.keyRotated)
        #expect(removed.keyID == nil)
        let legacy = try #require(try await registry.devices(ids: [first.deviceID]).first)
        #expect(legacy.publicKey == nil && legacy.keyID == nil && legacy.keyRegisteredAt == nil)
    }

    @Test("re-registering the same token and key moves the registration time forward and keeps the key")
    func reRegister() async throws {
        let user = recipient()
        let registration = DeviceRegistration(
            recipientID: user, platform: .ios, appID: ios, environment: .production, token: TestKeys.apnsToken(),
            publicKey: TestKeys.third, appVersion: "1.0")
        let first = try await registry.register(registration)
        let before = try #require(try await registry.devices(ids: [first.deviceID], in: app).first)
        let again = try await registry.register(registration)
        #expect(again.deviceID == first.deviceID)
        #expect(!again.created && !again.keyRotated)
        #expect(again.keyID == first.keyID)
        let after = try #require(try await registry.devices(ids: [first.deviceID], in: app).first)
        #expect(after.tokenRegisteredAt > before.tokenRegisteredAt)
        #expect(after.keyRegisteredAt == before.keyRegisteredAt)
    }

    @Test("all devices of hundreds of recipients come back together, duplicates ignored, only this app's")
    func batchLookup() async throws {
        let users = (0..<300).map { recipient("batch\($0)") }
        let key = TestKeys.first
        var expected: [String: Set<Int64>] = [:]
        try await withThrowingTaskGroup(of: (String, Int64).self) { group in
            for user in users {
                group.addTask {
                    (user, try await registry.register(DeviceRegistration(
                        recipientID: user, platform: .ios, appID: ios, environment: .production, token: TestKeys.apnsToken(), publicKey: key)).deviceID)
                }
                group.addTask {
                    (user, try await registry.register(DeviceRegistration(
                        recipientID: user, platform: .android, appID: android, environment: nil, token: "fcm:\(user)", publicKey: nil)).deviceID)
                }
            }
            for try await (user, id) in group { expected[user, default: []].insert(id) }
        }
        // The same recipients in another app must not show up.
        _ = try await registry.register(DeviceRegistration(
            recipientID: users[0], platform: .android, appID: "other-\(android)", environment: nil, token: "fcm:other", publicKey: nil))

        let devices = try await registry.devices(forRecipients: users + users.prefix(10) + [recipient("nobody")], in: app)
        #expect(devices.count == 600)
        var found: [String: Set<Int64>] = [:]
        for device in devices { found[device.recipientID, default: []].insert(device.id) }
        #expect(found == expected)
        #expect(Set(devices.map(\.appID)) == [ios, android])

        let onlyIOS = try await registry.devices(forRecipients: users, in: AppIdentifiers(iosBundleID: ios))
        #expect(onlyIOS.count == 300 && onlyIOS.allSatisfy { $0.platform == .ios })
        let byID = try await registry.devices(ids: Array(expected[users[1]] ?? []) + [Int64.max], in: app)
        #expect(Set(byID.map(\.id)) == expected[users[1]])
        #expect(try await registry.devices(forRecipients: [], in: app).isEmpty)
    }

    @Test("a capped lookup keeps each recipient's newest devices and names only the recipients that had more")
    func cappedLookup() async throws {
        // Three devices, exactly two, and one, with a cap of two.
        let over = recipient("over"), atCap = recipient("at"), under = recipient("under")
        var registered: [String: [Int64]] = [:]
        for (user, count) in [(over, 3), (atCap, 2), (under, 1)] {
            for index in 0..<count {
                // One after the other, so the later ids are the later registrations.
                let id = try await registry.register(DeviceRegistration(
                    recipientID: user, platform: .android, appID: android, environment: nil,
                    token: "fcm:\(user):\(index)", publicKey: nil)).deviceID
                registered[user, default: []].append(id)
            }
        }
        let (devices, capped) = try await registry.devices(
            forRecipients: [over, atCap, under, recipient("nobody")], in: app, maximumPerRecipient: 2)
        #expect(capped == [over])
        #expect(Set(devices.map(\.id)) == Set(registered[over, default: []].suffix(2) + registered[atCap, default: []] + registered[under, default: []]))

        let (all, none) = try await registry.devices(forRecipients: [over, atCap, under], in: app, maximumPerRecipient: 3)
        #expect(none.isEmpty, "three devices at a cap of three are not more than the cap")
        #expect(all.count == 6)
    }

    @Test("given the keys it knows, a lookup takes those texts from the caller by SHA-256 and fetches the others whole")
    func knownKeysByDigest() async throws {
        let user = recipient("digest"), over = recipient("digest-over")
        let known = TestKeys.first
        let unknown = try DevicePrivateKey.generate().publicKey.subjectPublicKeyInfoBase64
        var ids: [Int64] = []
        for (platform, key) in [(Platform.ios, known), (.android, unknown), (.android, nil)] {
            ids.append(try await registry.register(DeviceRegistration(
                recipientID: user, platform: platform, appID: platform == .ios ? ios : android,
                environment: platform == .ios ? .production : nil,
                token: platform == .ios ? TestKeys.apnsToken() : "fcm:\(user):\(ids.count)", publicKey: key)).deviceID)
        }
        for index in 0..<4 {
            _ = try await registry.register(DeviceRegistration(
                recipientID: over, platform: .android, appID: android, environment: nil, token: "fcm:\(over):\(index)", publicKey: known))
        }
        let knownDigest = DevicePublicKey.checkDigest(ofKeyText: known)
        let asked = Mutex<[[UInt8]]>([])
        let knownKeys = KnownPublicKeys { digest in
            asked.withLock { $0.append(Array(digest)) }
            return Array(digest) == knownDigest ? known : nil
        }

        // A cap of three: `user` is at it, `over` has one more.
        let (plain, plainCapped) = try await registry.devices(forRecipients: [user, over], in: app, maximumPerRecipient: 3)
        let (byDigest, digestCapped) = try await registry.devices(
            forRecipients: [user, over], in: app, maximumPerRecipient: 3, knownKeys: knownKeys)
        // Field for field the same devices (the key texts included), the same capped recipient.
        #expect(Dictionary(uniqueKeysWithValues: byDigest.map { ($0.id, $0) }) == Dictionary(uniqueKeysWithValues: plain.map { ($0.id, $0) }))
        #expect(byDigest.count == 6 && digestCapped == [over] && plainCapped == [over])
        #expect(byDigest.first { $0.id == ids[1] }?.publicKey == unknown)
        #expect(byDigest.first { $0.id == ids[2] }?.publicKey == nil)
        // Which texts came from the caller: what tells a worker that a key needs no full check.
        let knownFlagged = byDigest.filter { $0.publicKey == known }.map(\.publicKeyFromCallersCache)
        #expect(knownFlagged == [true, true, true, true])
        #expect(byDigest.first { $0.id == ids[1] }?.publicKeyMayNeedFullCheck == true)
        #expect(!plain.contains { $0.publicKeyFromCallersCache })
        // Asked once per device with a key (not for the one without), with the texts' digests.
        let digests = asked.withLock { $0 }
        #expect(digests.count == 5)
        #expect(Set(digests) == [knownDigest, DevicePublicKey.checkDigest(ofKeyText: unknown)])

        // By id, the app filter still applies: another app's device is not returned.
        let other = try await registry.register(DeviceRegistration(
            recipientID: user, platform: .android, appID: "other-\(android)", environment: nil, token: "fcm:\(user):other", publicKey: unknown))
        let byID = try await registry.devices(ids: ids + [other.deviceID], in: app, knownKeys: knownKeys)
        let plainByID = try await registry.devices(ids: ids + [other.deviceID], in: app)
        #expect(Set(byID.map(\.id)) == Set(ids))
        #expect(Dictionary(uniqueKeysWithValues: byID.map { ($0.id, $0) }) == Dictionary(uniqueKeysWithValues: plainByID.map { ($0.id, $0) }))
        // A fetched key comes with its check recorded or not, as a lookup by text says.
        #expect(byID.first { $0.id == ids[1] }?.publicKeyChecked == plainByID.first { $0.id == ids[1] }?.publicKeyChecked)
    }

    @Test("one lookup of many recipients is one statement, prepared on the session's first (a pool of its own counts them)")
    func oneRoundTrip() async throws {
        var configuration = fixture.configuration
        configuration.poolSize = 1
        try await TestDatabase.withPool(configuration) { pool in
            let registry = DeviceRegistry(pool: pool)
            let users = (0..<50).map { recipient("rt\($0)") }
            for user in users {
                _ = try await registry.register(DeviceRegistration(
                    recipientID: user, platform: .android, appID: android, environment: nil, token: "fcm:\(user)", publicKey: nil))
            }
            let before = pool.statistics
            let devices = try await registry.devices(forRecipients: users, in: app)
            #expect(devices.count == 50)
            #expect(pool.statistics.statementsSent - before.statementsSent == 1)
            // Prepared on the session's first lookup, executed by name after that.
            #expect(pool.statistics.statementsPrepared - before.statementsPrepared == 1)
            let again = try await registry.devices(forRecipients: users, in: app)
            #expect(Set(again.map(\.id)) == Set(devices.map(\.id)))
            #expect(pool.statistics.statementsSent - before.statementsSent == 2)
            #expect(pool.statistics.statementsPrepared - before.statementsPrepared == 1)
        }
    }

    @Test("hostile recipient ids and tokens are stored and found verbatim", arguments: [
        "'; DROP TABLE devices; --",
        "Robert'); DROP TABLE devices;--",
        #"back\slash \\ and "double" 'single' quotes"#,
        "$1 %s %n {} ${x} \u{0007}",
        "Ünïcødé 😀 \u{202E}right-to-left\u{202C} 中文 \u{FEFF}",
        "line\nbreak\r\ttab",
        String(repeating: "ü", count: 1024),
    ])
    func hostileStrings(hostile: String) async throws {
        let token = #"x'||pg_sleep(1)||'\";--DROP"# + recipient("t")
        let longToken = String(repeating: "A", count: 4096 - 40) + recipient("long").prefix(40)
        let androidOutcome = try await registry.register(DeviceRegistration(
            recipientID: hostile, platform: .android, appID: android, environment: nil, token: token, publicKey: TestKeys.first,
            appVersion: "'; DROP TABLE devices; --"))
        let longOutcome = try await registry.register(DeviceRegistration(
            recipientID: hostile, platform: .android, appID: android, environment: nil, token: String(longToken), publicKey: nil))
        let devices = try await registry.devices(forRecipients: [hostile], in: app)
        #expect(Set(devices.map(\.id)) == [androidOutcome.deviceID, longOutcome.deviceID])
        #expect(devices.allSatisfy { $0.recipientID == hostile })
        #expect(Set(devices.map(\.token)) == [token, String(longToken)])
        #expect(devices.first { $0.id == androidOutcome.deviceID }?.appVersion == "'; DROP TABLE devices; --")
        #expect(try await fixture.pool.query("SELECT to_regclass('devices') IS NOT NULL").singleRow().decode(Bool.self, column: 0))
        #expect(try await registry.prune(PruneRequest(appID: android, platform: .android, environment: nil, token: token, invalidSince: nil)))
    }

    @Test("a recipient id with NUL, or too long, is refused with a clear error")
    func refusedStrings() async throws {
        let nul = await #expect(throws: StoreError.self) {
            try await registry.register(DeviceRegistration(
                recipientID: "a\u{0}b", platform: .android, appID: android, environment: nil, token: "fcm:nul", publicKey: nil))
        }
        guard case .invalidParameter(1, _)? = nul else { Issue.record("expected invalidParameter($1), got \(String(describing: nul))"); return }
        let long = await #expect(throws: StoreError.self) {
            try await registry.register(DeviceRegistration(
                recipientID: String(repeating: "x", count: 1025), platform: .android, appID: android, environment: nil, token: "fcm:long", publicKey: nil))
        }
        #expect(long?.sqlState == "22023")
    }

    @Test("arguments the SQL function refuses come back as a non-retryable server error with SQLSTATE 22023")
    func databaseValidation() async throws {
        let error = await #expect(throws: StoreError.self) {
            try await registry.register(DeviceRegistration(
                recipientID: recipient(), platform: .android, appID: android, environment: .sandbox, token: "fcm:x", publicKey: nil))
        }
        #expect(error?.sqlState == "22023")
        #expect(error?.isRetryable == false)
        #expect(error?.description.contains("sandbox") == true)
    }

    @Test("pruning honours the APNs 410 timestamp and is idempotent")
    func prune() async throws {
        let token = TestKeys.apnsToken()
        let outcome = try await registry.register(DeviceRegistration(
            recipientID: recipient(), platform: .ios, appID: ios, environment: .production, token: token, publicKey: nil))
        let registeredBefore = PruneRequest(appID: ios, platform: .ios, environment: .production, token: token.uppercased(),
                                            invalidSince: Date(timeIntervalSinceNow: -3600))
        #expect(try await registry.prune(registeredBefore) == false, "re-registered after the 410 timestamp: kept")
        #expect(try await registry.devices(ids: [outcome.deviceID]).count == 1)
        let unconditional = PruneRequest(appID: ios, platform: .ios, environment: .production, token: token, invalidSince: nil)
        #expect(try await registry.prune(unconditional))
        #expect(try await registry.devices(ids: [outcome.deviceID]).isEmpty)
        #expect(try await registry.prune(unconditional) == false)
    }

    @Test("a batch prune answers per token, in the order asked, in one statement")
    func pruneBatch() async throws {
        var tokens: [String] = []
        for index in 0..<4 {
            let token = "fcm:\(recipient("p\(index)"))"
            tokens.append(token)
            _ = try await registry.register(DeviceRegistration(
                recipientID: recipient(), platform: .android, appID: android, environment: nil, token: token, publicKey: nil))
        }
        let kept = TestKeys.apnsToken()
        _ = try await registry.register(DeviceRegistration(
            recipientID: recipient(), platform: .ios, appID: ios, environment: .sandbox, token: kept, publicKey: nil))
        let requests = [
            PruneRequest(appID: android, platform: .android, environment: nil, token: tokens[3], invalidSince: nil),
            PruneRequest(appID: android, platform: .android, environment: nil, token: "fcm:never-registered", invalidSince: nil),
            PruneRequest(appID: ios, platform: .ios, environment: .sandbox, token: kept, invalidSince: Date(timeIntervalSince1970: 0)),
            PruneRequest(appID: android, platform: .android, environment: .production, token: tokens[0], invalidSince: Date(timeIntervalSinceNow: 3600)),
            PruneRequest(appID: android, platform: .android, environment: nil, token: tokens[3], invalidSince: nil),
            PruneRequest(appID: android, platform: .android, environment: nil, token: tokens[1], invalidSince: nil),
        ]
        let pruned = try await registry.pruneBatch(requests)
        #expect(pruned == [true, false, false, true, false, true])
        let remaining = try await fixture.pool.query("SELECT push_token FROM devices WHERE push_token = ANY(\(tokens + [kept]))")
            .map { row throws(StoreError) in try row.decode(String.self, column: 0) }
        #expect(Set(remaining) == [tokens[2], kept])
        #expect(try await registry.pruneBatch([]).isEmpty)
    }

    @Test("many concurrent registrations of one token make exactly one device")
    func concurrentRegistration() async throws {
        let token = "fcm:" + recipient("race")
        let keys = [TestKeys.first, TestKeys.second, TestKeys.third]
        let outcomes = try await withThrowingTaskGroup(of: RegistrationOutcome.self) { group in
            for index in 0..<24 {
                group.addTask {
                    try await registry.register(DeviceRegistration(
                        recipientID: "racer-\(index % 3)", platform: .android, appID: android, environment: nil, token: token,
                        publicKey: keys[index % 3]))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(outcomes.map(\.deviceID)).count == 1)
        #expect(outcomes.filter(\.created).count == 1)
        let rows = try await fixture.pool.query("SELECT count(*) FROM devices WHERE push_token = \(token)").singleRow().decode(Int.self, column: 0)
        #expect(rows == 1)
    }
}
