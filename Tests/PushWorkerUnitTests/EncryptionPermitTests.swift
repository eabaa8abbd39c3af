import PushCrypto
import PushModel
import PushStore
@testable import PushWorker
import Testing

/// `encryption_concurrency` bounds a worker's CPU work per device: the sealing, and the
/// full check of a key no worker has checked yet (4-7 ms, far more than a seal).
@Suite("Encryption permits")
struct EncryptionPermitTests {
    @Test("a new key is checked only once its device holds an encryption permit")
    func keyCheckWaitsForAPermit() async throws {
        let keys = PublicKeyCache()
        // Never connects: `envelope(for:context:)` reads no database (the pool opens lazily).
        let registry = DeviceRegistry(pool: ConnectionPool(configuration: try StoreConfiguration(url: "host=127.0.0.1 port=1")))
        let processor = JobProcessor(
            registry: registry, router: DeliveryRouter(apns: [], fcm: []), keys: keys,
            limits: .init(encryptions: 1, deliveries: 10), metrics: WorkerMetrics())
        let context = JobContext(try Fixtures.accepted(Fixtures.jobJSON(#""content":{"title":"t","message":"m"}"#)))
        let key = try DevicePrivateKey.generate().publicKey.subjectPublicKeyInfoBase64
        let device = Device(
            id: 1, recipientID: "user-1", platform: .ios, appID: "com.example.app", environment: .production,
            token: "token-1", publicKey: key, keyID: "kid-1", keyRegisteredAt: nil, tokenRegisteredAt: Fixtures.now,
            appVersion: nil)
        #expect(device.publicKeyMayNeedFullCheck)

        // The only permit is taken: the device's task must wait before it touches its key.
        try await processor.encryptionPermits.acquire()
        let sealing = Task { await processor.envelope(for: device, context: context) }
        while processor.encryptionPermits.waiting == 0 { await Task.yield() }
        #expect(keys.fullChecks == 0 && keys.count == 0, "the key was checked without a permit")
        processor.encryptionPermits.release()

        guard case .success(let envelope?) = await sealing.value else {
            Issue.record("expected an envelope")
            return
        }
        #expect(!envelope.bytes.isEmpty)
        #expect(keys.fullChecks == 1 && keys.count == 1)
    }
}
