import Foundation
import PushClient
import PushCrypto
import Testing

/// The Live Activity enrichment core on payloads laid out as the contract says.
@Suite("Live Activities as the phone reads them")
struct LiveActivityTests {
    typealias P = LiveActivityPayloads
    static let stagingKey = "__tt_la_enrichment_meeting-77123"
    static let avatarFile = "file:///AppGroup/ExpoWidgets/la-avatar-meeting-77123"

    static func enricher(store: any KeyStore = Payloads.store(0), downloader: FakeAvatarDownloader = FakeAvatarDownloader(),
                         staging: any EnrichmentStaging = InMemoryEnrichmentStaging()) -> LiveActivityEnricher {
        LiveActivityEnricher(keyStore: store, staging: staging, downloader: downloader)
    }

    static var enrichedProps: [String: PayloadValue] {
        var props = P.clearDictionary.merging(P.privateProps) { $1 }
        props["avatarUrl"] = .string(avatarFile)
        return props
    }

    @Test("start: PII decrypted, avatar downloaded to la-avatar-<id> and rewritten, staged under __tt_la_enrichment_<id>")
    func start() async throws {
        let downloader = FakeAvatarDownloader()
        let staging = InMemoryEnrichmentStaging()
        let enricher = Self.enricher(downloader: downloader, staging: staging)
        let reading = try #require(await enricher.readAny(json: try P.payload(event: "start", sealedFor: Payloads.key(0), aps: P.startExtras)).liveActivity)
        #expect(reading.malformed == nil)
        let view = reading.view
        #expect(view.enrichment == .enriched(avatarFile: Self.avatarFile))
        #expect(view.props == Self.enrichedProps)
        #expect(view.props["encrypted_data"] == nil)
        #expect(view.event == "start" && view.timestamp == 1_764_547_200 && view.name == "InterviewActivity")
        #expect(view.attributesType == "LiveActivityAttributes" && view.attributes == ["name": .string("InterviewActivity")])
        #expect(view.alert == LiveActivityAlert(title: "Interview in 15 minutes", body: "Open to see who you are meeting", sound: "default"))
        #expect(view.staleDate == 1_764_551_700 && view.relevanceScore == 50)
        let requests = await downloader.requests.made
        #expect(requests.map(\.remote) == ["https://example.com/ada.png"] && requests.map(\.file) == ["la-avatar-meeting-77123"])
        var staged = P.privateProps
        staged["avatarUrl"] = .string(Self.avatarFile)
        #expect(await staging.staged(under: Self.stagingKey) == staged)
        #expect(view.mergedStagingKey == Self.stagingKey)
    }

    @Test("an update that replaces the content-state without PII (a broadcast) gets the staged enrichment merged back")
    func mergeRule() async throws {
        let enricher = Self.enricher()
        _ = await enricher.readAny(json: try P.payload(event: "start", sealedFor: Payloads.key(0), aps: P.startExtras))
        let clear: [(String, PayloadValue)] = [("meetingEventId", .string(P.meetingID)), ("status", .string("started"))]
        let reading = try #require(await enricher.readAny(json: try P.payload(event: "update", clear: clear, sealedFor: nil)).liveActivity)
        #expect(reading.view.enrichment == .notEnriched)
        var expected = Dictionary(uniqueKeysWithValues: clear).merging(P.privateProps) { $1 }
        expected["avatarUrl"] = .string(Self.avatarFile)
        #expect(reading.view.props == expected)
        #expect(reading.view.mergedStagingKey == Self.stagingKey)
        // Another activity's update gets nothing of it.
        let other: [(String, PayloadValue)] = [("meetingEventId", .string("meeting-1")), ("status", .string("started"))]
        let unrelated = try #require(await enricher.readAny(json: try P.payload(event: "update", clear: other, sealedFor: nil)).liveActivity)
        #expect(unrelated.view.props == Dictionary(uniqueKeysWithValues: other))
    }

    @Test("update and end with new PII re-enrich and re-stage; an end without content-state keeps its dates")
    func updateAndEnd() async throws {
        let staging = InMemoryEnrichmentStaging()
        let enricher = Self.enricher(staging: staging)
        var renamed = P.privateProps
        renamed["candidateName"] = .string("Grace Hopper")
        let update = try #require(await enricher.readAny(json: try P.payload(event: "update", privateProps: renamed, sealedFor: Payloads.key(0))).liveActivity)
        #expect(update.view.props["candidateName"] == .string("Grace Hopper"))
        #expect(await staging.staged(under: Self.stagingKey)?["candidateName"] == .string("Grace Hopper"))
        let end = try #require(await enricher.readAny(json: try P.payload(
            event: "end", sealedFor: Payloads.key(0), aps: ["dismissal-date": .number(1_764_552_300)])).liveActivity)
        #expect(end.view.enrichment == .enriched(avatarFile: Self.avatarFile) && end.view.props == Self.enrichedProps)
        #expect(end.view.dismissalDate == 1_764_552_300)
        let bare = try #require(await enricher.readAny(json: try P.payload(
            event: "end", sealedFor: nil, aps: ["dismissal-date": .number(1)], contentState: false)).liveActivity)
        #expect(bare.malformed == nil && bare.view.name == nil && bare.view.props.isEmpty && bare.view.dismissalDate == 1)
    }

    @Test("the envelope inside props may be a JSON string")
    func envelopeAsString() async throws {
        let reading = try #require(await Self.enricher().readAny(json: try P.payload(event: "start", sealedFor: Payloads.key(0), envelopeAsString: true)).liveActivity)
        #expect(reading.view.props == Self.enrichedProps)
    }

    @Test("keyless devices and broadcasts render the clear props only")
    func clearOnly() async throws {
        let reading = try #require(await Self.enricher().readAny(json: try P.payload(event: "start", sealedFor: nil, aps: P.startExtras)).liveActivity)
        #expect(reading.view.enrichment == .notEnriched && reading.malformed == nil)
        #expect(reading.view.props == P.clearDictionary)
    }

    @Test("locked, wrong key, tampered: the non-PII layout, with the reason", arguments: [0, 1, 2])
    func fallback(kind: Int) async throws {
        var store = Payloads.store(0)
        var bytes = try P.payload(event: "start", sealedFor: Payloads.key(kind == 1 ? 1 : 0))
        var expected = FallbackReason.locked
        switch kind {
        case 0: store.isLocked = true
        case 1: expected = .wrongKey
        default:
            // Alter one character of the ciphertext inside the props string (escaped JSON).
            let text = String(decoding: bytes, as: UTF8.self)
            let marker = try #require(text.range(of: "cipher_text\\\":\\\""))
            var scalars = Array(text)
            let index = text.distance(from: text.startIndex, to: marker.upperBound) + 2
            scalars[index] = scalars[index] == "A" ? "B" : "A"
            bytes = Array(String(scalars).utf8)
            expected = .authenticationFailed
        }
        let downloader = FakeAvatarDownloader()
        let reading = try #require(await Self.enricher(store: store, downloader: downloader).readAny(json: bytes).liveActivity)
        #expect(reading.view.enrichment == .fallback(expected))
        #expect(reading.view.props == P.clearDictionary)
        #expect(await downloader.requests.made.isEmpty)
    }

    @Test("a failed avatar download keeps the remote URL and still enriches")
    func downloadFails() async throws {
        let reading = try #require(await Self.enricher(downloader: FakeAvatarDownloader(fails: true))
            .readAny(json: try P.payload(event: "start", sealedFor: Payloads.key(0))).liveActivity)
        #expect(reading.view.enrichment == .enriched(avatarFile: nil))
        #expect(reading.view.props == P.clearDictionary.merging(P.privateProps) { $1 })
    }

    @Test("props as an object (ContentState decodes a String) and a start without content-state are malformed")
    func malformed() async throws {
        let objectProps = #"{"aps":{"event":"update","timestamp":1,"content-state":{"name":"X","props":{"meetingEventId":"m"}}}}"#
        let missing = #"{"aps":{"event":"start","timestamp":1}}"#
        let badEvent = #"{"aps":{"event":"begin","content-state":{"name":"X","props":"{}"}}}"#
        for text in [objectProps, missing, badEvent] {
            let reading = try #require(await Self.enricher().readAny(json: Array(text.utf8)).liveActivity)
            guard case .malformedPayload? = reading.malformed else {
                Issue.record("\(text): \(String(describing: reading.malformed))")
                continue
            }
        }
    }

    @Test("staging in a directory survives a new enricher (the twin across runs)")
    func directoryStaging() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushclient-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = await Self.enricher(staging: DirectoryEnrichmentStaging(directory: directory))
            .readAny(json: try P.payload(event: "start", sealedFor: Payloads.key(0)))
        let later = try #require(await Self.enricher(store: InMemoryKeyStore(), staging: DirectoryEnrichmentStaging(directory: directory))
            .readAny(json: try P.payload(event: "update", sealedFor: nil)).liveActivity)
        #expect(later.view.props == Self.enrichedProps)
    }
}
