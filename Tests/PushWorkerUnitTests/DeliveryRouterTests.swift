import PushCrypto
import Foundation
import PushDelivery
import PushModel
import PushTestSupport
@testable import PushWorker
import Testing

@Suite("Each push finds its app's client")
struct DeliveryRouterTests {
    static func apnsClient(team: String) throws -> APNsClient {
        try APNsClient(configuration: .init(teamID: team, keyID: "KEY1234567", privateKeyPEM: try TestKeyMaterial.p256PrivateKeyPEM()))
    }

    static func fcmClient(project: String, key: String) throws -> FCMClient {
        let account = FCMServiceAccount(
            projectID: project, clientEmail: "pushd@\(project).iam.gserviceaccount.com", privateKeyID: nil, privateKey: key,
            tokenURI: "https://oauth2.googleapis.com/token")
        return try FCMClient(configuration: .init(account: account))
    }

    /// Few apps are compared one by one, many are looked up by hash: both must route alike.
    @Test("a bundle id reaches its team's client, with few apps and with many", arguments: [2, 9])
    func apnsRouting(bundlesPerTeam: Int) throws {
        let first = try Self.apnsClient(team: "TEAMAAAAAA")
        let second = try Self.apnsClient(team: "TEAMBBBBBB")
        let firstBundles = (0..<bundlesPerTeam).map { "com.example.a\($0)" }
        let secondBundles = (0..<bundlesPerTeam).map { "com.example.b\($0)" }
        let router = DeliveryRouter(apns: [(first, firstBundles), (second, secondBundles)], fcm: [])
        for bundle in firstBundles { #expect(router.apns(for: bundle) === first) }
        for bundle in secondBundles { #expect(router.apns(for: bundle) === second) }
        #expect(router.apns(for: "com.example.unknown") == nil)
        #expect(router.apns(for: "com.example.a") == nil, "a prefix of a bundle id is not that bundle id")
        #expect(router.fcm(for: "any-project") == nil)
        #expect(router.loopThreadCount == 2, "one loop thread per team's client")
    }

    @Test("a project id reaches its client; of two with the same project id the first wins", arguments: [1, 6])
    func fcmRouting(projects: Int) throws {
        let key = try DevicePrivateKey.generate().pkcs8PEM
        let clients = try (0..<projects).map { try Self.fcmClient(project: "project-\($0)", key: key) }
        let duplicate = try Self.fcmClient(project: "project-0", key: key)
        let router = DeliveryRouter(apns: [], fcm: clients + [duplicate])
        for (index, client) in clients.enumerated() { #expect(router.fcm(for: "project-\(index)") === client) }
        #expect(router.fcm(for: "project-\(projects)") == nil)
        #expect(router.apns(for: "project-0") == nil)
        // What `sealing_threads: auto` counts: the duplicate's loop never gets a push to seal.
        #expect(router.loopThreadCount == projects)
    }

    /// On the loops, a key that may need OpenSSL's full check (4-7 ms) is sealed on the pool:
    /// the row says so (neither recorded as checked nor from the worker's cache).
    @Test("a device whose key may need the full check is sealed on the pool; the others on their client's loop")
    func sealingExecutor() throws {
        let client = try Self.apnsClient(team: "TEAMAAAAAA")
        let router = DeliveryRouter(apns: [(client, ["com.example.a"])], fcm: [])
        let loop = try #require(client.loopExecutor)
        func device(key: String?, checked: Bool = false, cached: Bool = false, bundle: String = "com.example.a") -> Device {
            Device(
                id: 1, recipientID: "r", platform: .ios, appID: bundle, environment: .production, token: "ab", publicKey: key,
                keyID: key.map { _ in "k" }, keyRegisteredAt: nil, tokenRegisteredAt: Date(), appVersion: nil,
                publicKeyChecked: checked, publicKeyFromCallersCache: cached)
        }
        func executor(_ device: Device) -> ObjectIdentifier? {
            router.sealingExecutor(for: device).map { ObjectIdentifier($0 as AnyObject) }
        }
        let onLoop = ObjectIdentifier(loop as AnyObject)
        #expect(executor(device(key: "MII...", checked: true)) == onLoop)
        #expect(executor(device(key: "MII...", cached: true)) == onLoop)
        #expect(executor(device(key: nil)) == onLoop, "no key, no check")
        #expect(device(key: "MII...").publicKeyMayNeedFullCheck)
        #expect(executor(device(key: "MII...")) == nil, "never checked: the pool")
        #expect(executor(device(key: "MII...", checked: true, bundle: "com.example.unknown")) == nil, "no client: the pool")
        // A device without a key cannot claim either.
        #expect(!device(key: nil, checked: true, cached: true).publicKeyFromCallersCache)
    }

    /// A batch's split on the loops: a queue per loop in the order met, the pool's last.
    @Test("a batch's devices are queued by the loop that seals them; unchecked keys and unrouted apps in the pool's queue")
    func batchSplit() throws {
        let apns = try Self.apnsClient(team: "TEAMAAAAAA")
        let key = try DevicePrivateKey.generate().pkcs8PEM
        let fcm = try Self.fcmClient(project: "project-0", key: key)
        let router = DeliveryRouter(apns: [(apns, ["com.example.a"])], fcm: [fcm])
        func device(_ id: Int64, _ platform: Platform, app: String, checked: Bool) -> Device {
            Device(
                id: id, recipientID: "r", platform: platform, appID: app, environment: .production, token: "ab", publicKey: "MII...",
                keyID: "k", keyRegisteredAt: nil, tokenRegisteredAt: Date(), appVersion: nil, publicKeyChecked: checked)
        }
        let devices = [
            device(1, .android, app: "project-0", checked: true), device(2, .ios, app: "com.example.a", checked: true),
            device(3, .ios, app: "com.example.a", checked: false), device(4, .android, app: "project-0", checked: true),
            device(5, .ios, app: "com.example.unknown", checked: true), device(6, .ios, app: "com.example.a", checked: true),
        ]
        let (queues, executors) = JobProcessor.queuesByLoop(devices, sealingExecutor: router.sealingExecutor(for:))
        #expect(queues.map { $0.map(\.id) } == [[1, 4], [2, 6], [3, 5]])
        let identities = executors.map { $0.map { ObjectIdentifier($0 as AnyObject) } }
        let fcmLoop = try #require(fcm.loopExecutor), apnsLoop = try #require(apns.loopExecutor)
        #expect(identities == [ObjectIdentifier(fcmLoop as AnyObject), ObjectIdentifier(apnsLoop as AnyObject), nil])
    }
}
