import Foundation
import PushModel
import PushStore
import PushTestSupport
import Testing

/// `pushd phone` against a real worker: phones registered by the twin itself, pushes
/// watched on the emulator and shown as the phone would (decrypted, legacy, locked,
/// tampered, after a key rotation).
@Suite("pushd phone end to end", .serialized)
struct PhoneTwinTests {
    @Test("init registers, watch shows each push as the phone would, rotate keeps old pushes readable")
    func twin() async throws {
        try await WorkerFixture.run { fixture in
            let state = fixture.directory.appendingPathComponent("phone-state")
            let environment = fixture.environment.merging(["PUSHD_STATE_DIR": state.path]) { $1 }
            func phone(_ arguments: [String]) throws -> String {
                let result = try ChildProcess.run(BuildProducts.pushd, ["phone"] + arguments, environment: environment)
                #expect(result.status == 0, "pushd phone \(arguments.first ?? ""): \(result.errorText)")
                #expect(!result.outputText.contains("PRIVATE KEY"))
                return result.outputText
            }
            let iosToken = WorkerFixture.token(platform: .ios, kind: .normal, index: 1)
            let legacyToken = WorkerFixture.token(platform: .ios, kind: .legacy, index: 2)
            let androidToken = WorkerFixture.token(platform: .android, kind: .normal, index: 3)
            let recipient = "\(fixture.prefix)-ada"
            let initialized = try phone(["init", "--name", "ada", "--format", "ios", "--recipient", recipient,
                                         "--app", fixture.bundleID, "--token", iosToken])
            #expect(initialized.contains("device_id ") && !initialized.contains("not registered"), "\(initialized)")
            _ = try phone(["init", "--name", "bob", "--format", "android", "--recipient", recipient,
                           "--app", EmulatorProcess.projectID, "--token", androidToken])
            _ = try phone(["init", "--name", "old-app", "--format", "ios", "--recipient", recipient,
                           "--app", fixture.bundleID, "--token", legacyToken])
            // The old app version re-registers its token without a key: it gets fallback text only.
            _ = try await fixture.registry.register(DeviceRegistration(
                recipientID: recipient, platform: .ios, appID: fixture.bundleID, environment: .production,
                token: legacyToken, publicKey: nil))

            let worker = try fixture.startWorker()
            _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-one", recipients: [recipient], title: "Interview with Ada"))
            let arrived = try await waitUntil(timeout: .seconds(60), every: .milliseconds(250)) {
                try await fixture.emulator.pushes().count >= 3
            }
            #expect(arrived, "worker log:\n\(worker.log.suffix(2000))")

            let watch = ["--emulator-admin", fixture.emulator.adminURL, "--once"]
            let ada = try phone(["watch", "--name", "ada"] + watch)
            #expect(ada.contains("decrypted by the notification service extension"), "\(ada)")
            #expect(ada.contains("Interview with Ada") && ada.contains("Acme Recruiting") && ada.contains("INSendMessageIntent"))
            #expect(ada.components(separatedBy: "── push #").count == 2, "exactly ada's one push:\n\(ada)")
            let bob = try phone(["watch", "--name", "bob"] + watch)
            #expect(bob.contains("decrypted by the messaging service") && bob.contains("Interview with Ada"), "\(bob)")
            let legacy = try phone(["watch", "--name", "old-app"] + watch)
            #expect(legacy.contains("FALLBACK (legacy)") && legacy.contains("New message") && !legacy.contains("Interview"), "\(legacy)")
            let locked = try phone(["watch", "--name", "ada", "--locked"] + watch)
            #expect(locked.contains("FALLBACK (locked)") && !locked.contains("Interview"), "\(locked)")

            // A tampered copy of ada's payload falls back with its reason.
            let record = try #require(try await fixture.emulator.pushes().first { $0["token"] as? String == iosToken })
            let body = try #require(record["body"] as? String)
            var payload = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            let sealed = try #require(payload["encrypted_data"] as? String)
            var envelope = try #require(try JSONSerialization.jsonObject(with: Data(sealed.utf8)) as? [String: String])
            let cipherText = try #require(envelope["cipher_text"])
            envelope["cipher_text"] = (cipherText.hasPrefix("A") ? "B" : "A") + cipherText.dropFirst()
            payload["encrypted_data"] = String(decoding: try JSONSerialization.data(withJSONObject: envelope), as: UTF8.self)
            let original = fixture.directory.appendingPathComponent("ada-original.json")
            let tampered = fixture.directory.appendingPathComponent("ada-tampered.json")
            try Data(body.utf8).write(to: original)
            try JSONSerialization.data(withJSONObject: payload).write(to: tampered)
            let shownTampered = try phone(["show", "--name", "ada", "--file", tampered.path])
            #expect(shownTampered.contains("FALLBACK (authentication_failed)") && !shownTampered.contains("Interview"), "\(shownTampered)")

            // After a rotation new pushes use the new key, and the first push still opens by its kid.
            let rotated = try phone(["rotate", "--name", "ada"])
            #expect(rotated.contains("key_id ") && rotated != initialized)
            _ = try await fixture.publish(fixture.job(id: "\(fixture.prefix)-two", recipients: [recipient], title: "Second interview"))
            let second = try await waitUntil(timeout: .seconds(60), every: .milliseconds(250)) {
                try await fixture.emulator.pushes().count >= 6
            }
            #expect(second)
            let afterRotation = try phone(["watch", "--name", "ada"] + watch)
            #expect(afterRotation.contains("Second interview") && afterRotation.contains("Interview with Ada"), "\(afterRotation)")
            #expect(!afterRotation.contains("FALLBACK"), "\(afterRotation)")
            #expect(try phone(["show", "--name", "ada", "--file", original.path]).contains("Interview with Ada"))
            #expect(await worker.terminate(timeout: .seconds(30)) == 0)
            try? FileManager.default.removeItem(at: state)
        }
    }
}
