import Foundation
import PushClient
import PushCrypto
import PushModel
import Testing

/// Every alert payload the worker builds reads on the phone as exactly the job's content.
@Suite("Alerts as the phone reads them")
struct AlertReadingTests {
    @Test("APNs: the decrypted display is exactly the job's content and presentation")
    func apnsShowsContent() async throws {
        for (index, job) in try Payloads.variedJobs().enumerated() {
            let payload = try Payloads.apns(job, sealedFor: Payloads.key(index))
            let reading = try #require(await Payloads.read(payload, store: Payloads.store(index)).alert)
            #expect(reading.fallbackReason == nil, "\(reading.fallbackReason?.description ?? "")")
            #expect(reading.display == (try Payloads.expectedDisplay(job, platform: .ios)))
        }
    }

    @Test("FCM: the decrypted display is exactly the job's content, from the request body or the data map")
    func fcmShowsContent() async throws {
        for (index, job) in try Payloads.variedJobs().enumerated() {
            let body = try Payloads.fcm(job, sealedFor: Payloads.key(index))
            let expected = try Payloads.expectedDisplay(job, platform: .android)
            let reading = try #require(await Payloads.read(body, store: Payloads.store(index)).alert)
            #expect(reading.fallbackReason == nil)
            #expect(reading.display == expected)

            let data = try #require(PayloadValue(json: body)?["message"]?["data"]?.objectValue)
            let map = data.compactMapValues(\.stringValue)
            let direct = NotificationReader(keyStore: Payloads.store(index)).readFCM(map)
            #expect(direct == reading)
        }
    }

    @Test("a communication notification gives the INSendMessageIntent fields")
    func communicationIntent() async throws {
        let job = try Payloads.variedJobs()[1]
        let reading = try #require(await Payloads.read(try Payloads.apns(job, sealedFor: Payloads.key(0)), store: Payloads.store(0)).alert)
        let intent = try #require(reading.display.communicationIntent)
        #expect(intent.senderPersonHandle == "acme" && intent.senderCustomIdentifier == "acme")
        #expect(intent.senderDisplayName == "Acme Recruiting")
        #expect(intent.senderImageURL == "https://example.com/a.png")
        #expect(intent.conversationIdentifier == "interviews")
        #expect(intent.content == "Tomorrow 10:00, room 4")
        let plain = try Payloads.variedJobs()[0]
        let noSender = try #require(await Payloads.read(try Payloads.apns(plain, sealedFor: Payloads.key(0)), store: Payloads.store(0)).alert)
        #expect(noSender.display.communicationIntent == nil)
    }

    @Test("legacy payloads (keyless devices) show the fallback text and presentation, reason legacy")
    func legacy() async throws {
        for job in try Payloads.variedJobs() {
            for (bytes, platform) in [(try Payloads.apns(job, sealedFor: nil), DisplayedNotification.Platform.ios),
                                      (try Payloads.fcm(job, sealedFor: nil), .android)] {
                let reading = try #require(await Payloads.read(bytes, store: Payloads.store(0)).alert)
                #expect(reading.fallbackReason == .legacyPayload)
                #expect(reading.display == Payloads.expectedFallback(job, platform: platform))
            }
        }
    }

    @Test("a job without private content: every device gets the fallback only")
    func noContent() async throws {
        let job = try Payloads.job([:])
        #expect(SealedContent.plaintext(for: job) == nil)
        let reading = try #require(await Payloads.read(try APNsPayloadTemplate(job: job).payload(encryptedData: nil), store: Payloads.store(0)).alert)
        #expect(reading.fallbackReason == .legacyPayload)
        #expect(reading.display.title == "New message" && reading.display.body == "Open the app to read it")
    }

    @Test("the envelope may arrive as an object or as a JSON string")
    func envelopeAsObjectOrString() throws {
        let job = try Payloads.variedJobs()[0]
        let envelope = try Payloads.sealed(job, for: Payloads.key(0))
        let asObject = try #require(PayloadValue(json: Array(envelope.utf8)))
        let reader = NotificationReader(keyStore: Payloads.store(0))
        let base: [String: PayloadValue] = ["aps": .object(["alert": .object(["title": .string("t"), "body": .string("b")]),
                                                             "mutable-content": .number(1)])]
        for sealed in [asObject, .string(envelope)] {
            var root = base
            root["encrypted_data"] = sealed
            let reading = reader.readAPNs(.object(root))
            #expect(reading.fallbackReason == nil)
            #expect(reading.display.title == "Secret title")
        }
    }
}
