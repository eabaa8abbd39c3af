import Foundation
import PushCrypto
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// OpenSSL's public-key check (about 5 ms a key) runs once per key text in the cluster: a
/// worker records each key it checked in full, and a key recorded before is parsed without
/// that one check. The record is trusted only for the very text it was made for.
@Suite("Key checks recorded by workers", .serialized)
struct KeyCheckRecordingTests {
    /// PKCS#1 `RSAPublicKey` DER with the 2048-bit MODP prime of RFC 3526 as its modulus: the
    /// right size and exponent, but a prime modulus, which only the public-key check refuses.
    /// (The same prime as PushCryptoTests' `KeyCheckMemoryTests`, which shares no test
    /// support with this module.)
    static func primeModulusKeyDER() -> [UInt8] {
        let hex = """
            FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD\
            EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED\
            EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F\
            83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B\
            E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA0510\
            15728E5A8AACAA68FFFFFFFFFFFFFFFF
            """
        var modulus: [UInt8] = [0x00]  // INTEGER: the top bit is set
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            modulus.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        let body = [0x02, 0x82, 0x01, 0x01] + modulus + [0x02, 0x03, 0x01, 0x00, 0x01]
        return [0x30, 0x82, UInt8(body.count >> 8), UInt8(body.count & 0xff)] + body
    }

    @Test("keys checked in full are recorded; a recorded prime-modulus key is sealed for, the same key unrecorded is refused")
    func recordsAndTrustsOnlyTheRecord() async throws {
        try await WorkerFixture.run { fixture in
            let normal = try await fixture.registerRecipients(1) { _, _ in .normal }
            let der = Self.primeModulusKeyDER()
            // The same modulus in two texts: base64 (recorded as checked) and PEM (not).
            let recordedText = Data(der).base64EncodedString()
            let unrecordedText = "-----BEGIN RSA PUBLIC KEY-----\n"
                + Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
                + "\n-----END RSA PUBLIC KEY-----\n"
            let recipient = "\(fixture.prefix)-prime"
            _ = try await fixture.registry.register(DeviceRegistration(
                recipientID: recipient, platform: .android, appID: EmulatorProcess.projectID, environment: nil,
                token: "fcm-recorded-\(fixture.prefix)", publicKey: recordedText))
            let unrecorded = try await fixture.registry.register(DeviceRegistration(
                recipientID: recipient, platform: .android, appID: EmulatorProcess.projectID, environment: nil,
                token: "fcm-unrecorded-\(fixture.prefix)", publicKey: unrecordedText))
            try await fixture.registry.recordPublicKeyChecks([DevicePublicKey.checkDigest(ofKeyText: recordedText)])
            let keyEvents = try await fixture.subscribe(toEvents: KeyInvalidEvent.name)

            let worker = try fixture.startWorker()
            _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-keys", recipients: [normal[0].recipient, recipient], title: "Keys"))
            #expect(try await fixture.waitForAccepted(normal.count + 1, timeout: .seconds(60), workers: [worker]), "log:\n\(worker.log.suffix(3000))")
            let events = try await fixture.collect(from: keyEvents, count: 1, timeout: .seconds(60))
            let event = try #require(events.first.map { try JSONDecoder().decode(KeyInvalidEvent.self, from: Data($0.body)) })
            #expect(event.deviceID == unrecorded.deviceID)
            #expect(event.reason.contains("public-key check"), "\(event.reason)")

            let tokens = Set(try await fixture.received().map(\.token))
            #expect(tokens.contains("fcm-recorded-\(fixture.prefix)"))
            #expect(!tokens.contains("fcm-unrecorded-\(fixture.prefix)"))
            #expect(Set(normal.map(\.token)).isSubset(of: tokens))

            // Every key the worker checked in full is recorded (after its batch: wait for it);
            // the refused one is not.
            let checked = Set(normal.compactMap { $0.keyIndex.map { fixture.publicKeys[$0] } }).map { Data(DevicePublicKey.checkDigest(ofKeyText: $0)) }
            let refused = [Data(DevicePublicKey.checkDigest(ofKeyText: unrecordedText))]
            let allRecorded = try await waitUntil(timeout: .seconds(30), every: .milliseconds(100)) {
                let count = try await fixture.pool.query(
                    "SELECT count(*) FROM pushd_public_key_checks WHERE digest = ANY(\(checked))").singleRow().decode(Int64.self, column: 0)
                return count == Int64(checked.count)
            }
            #expect(allRecorded, "log:\n\(worker.log.suffix(3000))")
            let refusedCount = try await fixture.pool.query(
                "SELECT count(*) FROM pushd_public_key_checks WHERE digest = ANY(\(refused))").singleRow().decode(Int64.self, column: 0)
            #expect(refusedCount == 0)
        }
    }
}
