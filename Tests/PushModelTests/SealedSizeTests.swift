import Foundation
import PushCrypto
import PushModel
import Testing

/// Item 1 of the hardening issue: a job whose content cannot fit any device once sealed is
/// refused from the job alone, and the verdict agrees with real sealing at the boundary.
@Suite("Sealed size at intake")
struct SealedSizeTests {
    static let key: DevicePrivateKey = {
        (try? DevicePrivateKey.generate()) ?? { preconditionFailure("RSA key generation failed") }()
    }()

    static func job(message: String, ios: Bool = true, android: Bool = false, data: String = "{}") -> Data {
        var app: [String] = []
        if ios { app.append(#""ios_bundle_id":"com.acme.app""#) }
        if android { app.append(#""fcm_project_id":"acme""#) }
        return Data(("""
            {"version":1,"job_id":"size-1","app":{\(app.joined(separator: ","))},"recipients":{"recipient_ids":["u"]},
             "content":{"title":"","message":"\(message)","data":\(data)},"fallback":{"title":"New message","message":"You have a new message"}}
            """).utf8)
    }

    @Test("a 1.9 MB content.data is refused with the reason, naming content")
    func hugeData() {
        let data = #"{"blob":""# + String(repeating: "x", count: 1_900_000) + #""}"#
        #expect {
            try NotificationJob(json: Self.job(message: "m", ios: true, android: true, data: data))
        } throws: { error in
            guard let error = error as? JobValidationError else { return false }
            return error.path == "content" && error.problem.contains("cannot fit any device")
        }
    }

    @Test("the boundary agrees with real sealing: the longest accepted message fits APNs, one byte more fits nothing")
    func boundaryAgreesWithSealing() throws {
        // The longest message the check accepts (binary search over the check alone).
        var low = 0, high = 4096
        while low < high {
            let middle = (low + high + 1) / 2
            if (try? NotificationJob(json: Self.job(message: String(repeating: "a", count: middle)))) != nil {
                low = middle
            } else {
                high = middle - 1
            }
        }
        #expect(low > 2000 && low < 2700, "the documented order of magnitude: \(low)")
        let accepted = try NotificationJob(json: Self.job(message: String(repeating: "a", count: low)))
        let plaintext = try #require(SealedContent.plaintext(for: accepted))
        let envelope = try EnvelopeSealer.sealJSON(plaintext, for: try Self.key.publicKey)
        #expect(try APNsPayloadTemplate(job: accepted).payload(encryptedData: envelope).count <= PayloadLimits.apns)

        // One byte more: the check refuses, and real sealing would indeed not fit. The check
        // parses a job with one more byte; the sealed payload of that job is too large.
        #expect(throws: JobValidationError.self) {
            try NotificationJob(json: Self.job(message: String(repeating: "a", count: low + 1)))
        }
        var over = accepted
        over.content?.message = String(repeating: "a", count: low + 1)
        let overPlaintext = try #require(SealedContent.plaintext(for: over))
        let overEnvelope = try EnvelopeSealer.sealJSON(overPlaintext, for: try Self.key.publicKey)
        #expect(throws: PayloadError.self) { try APNsPayloadTemplate(job: over).payload(encryptedData: overEnvelope) }
    }

    @Test("the stand-in envelope is exactly as long as a real RSA-2048 envelope without kid")
    func standInLength() throws {
        for length in [0, 1, 2, 3, 100, 2000] {
            let real = try EnvelopeSealer.sealJSON(Array(repeating: 0x41, count: length), for: try Self.key.publicKey)
            let job = try NotificationJob(json: Self.job(message: "m"))
            // Measured through the template: the same payload size for both.
            let template = APNsPayloadTemplate(job: job)
            let realSize = try template.payload(encryptedData: real).count
            let standInSize = try template.payload(encryptedData: NotificationJob.standInEnvelope(plaintextBytes: length)).count
            #expect(realSize == standInSize, "plaintext of \(length) bytes")
        }
    }

    @Test("a job for both platforms is accepted while one of them can still take it")
    func onePlatformSuffices() throws {
        // FCM counts data keys and values only, so it takes a little more than APNs.
        var length = 2500
        while (try? NotificationJob(json: Self.job(message: String(repeating: "a", count: length), ios: true))) != nil { length += 1 }
        #expect(throws: Never.self) {
            try NotificationJob(json: Self.job(message: String(repeating: "a", count: length), ios: true, android: true))
        }
    }
}

@Suite("What the size check renders, the worker reuses")
struct SealedPartsTests {
    @Test("an alert's document keeps the plaintext the check sealed, and the APNs template only with an iOS app")
    func partsKept() throws {
        let both = try JobDocument(json: SealedSizeTests.job(message: "hello", ios: true, android: true))
        let parts = try #require(both.sealedParts)
        #expect(parts.plaintext == SealedContent.plaintext(for: both.job))
        let template = try #require(parts.apnsTemplate)
        let envelope = NotificationJob.standInEnvelope(plaintextBytes: parts.plaintext.count)
        #expect(try template.payload(encryptedData: envelope) == APNsPayloadTemplate(job: both.job).payload(encryptedData: envelope))

        let android = try JobDocument(json: SealedSizeTests.job(message: "hello", ios: false, android: true))
        #expect(android.sealedParts?.plaintext == SealedContent.plaintext(for: android.job))
        #expect(android.sealedParts?.apnsTemplate == nil)
    }

    @Test("a job with nothing to seal keeps no parts, and two documents of one job are equal whatever they keep")
    func noParts() throws {
        let fallbackOnly = Data(#"""
            {"version":1,"job_id":"plain-1","app":{"ios_bundle_id":"com.acme.app"},"recipients":{"recipient_ids":["u"]},
             "fallback":{"title":"New","message":"Open the app"}}
            """#.utf8)
        let document = try JobDocument(json: fallbackOnly)
        #expect(document.sealedParts == nil)
        #expect(try JobDocument(json: fallbackOnly) == document)
    }
}
