/// The Live Activity enrichment core (SYSTEM.md, "Live Activity Enrichment"): what the app
/// does when a push wakes it, and what the widget does when it renders.
///
/// 1. read `content-state = {name, props}`, `props` a JSON string (the app's `ContentState`
///    decodes it as a `String`, so an object there would not decode on the phone);
/// 2. open `props.encrypted_data` (an envelope object, or a JSON string holding one) into
///    a JSON object of PII fields;
/// 3. download `avatarUrl` into `la-avatar-<meetingEventId>` and rewrite it to the local URL;
/// 4. stage the PII under `__tt_la_enrichment_<meetingEventId>`;
/// 5. render: the clear props with the staged enrichment merged over them — so a later update
///    without PII (which does not wake the app) still shows it.
public struct LiveActivityEnricher: Sendable {
    public let reader: NotificationReader
    public let staging: any EnrichmentStaging
    public let downloader: (any AvatarDownloader)?

    public init(keyStore: any KeyStore, staging: any EnrichmentStaging, downloader: (any AvatarDownloader)? = nil) {
        self.reader = NotificationReader(keyStore: keyStore)
        self.staging = staging
        self.downloader = downloader
    }

    /// Is this `userInfo` a Live Activity push (an `aps.event`, or a `content-state`)?
    public static func isLiveActivity(_ userInfo: PayloadValue) -> Bool {
        guard let aps = userInfo["aps"]?.objectValue else { return false }
        return aps["event"] != nil || aps["content-state"] != nil
    }

    public func read(_ userInfo: PayloadValue) async -> LiveActivityReading {
        guard let aps = userInfo["aps"]?.objectValue else {
            return LiveActivityReading(view: LiveActivityView(event: ""), malformed: .malformedPayload("no aps dictionary"))
        }
        let event = aps["event"]?.stringValue ?? ""
        var view = LiveActivityView(event: event)
        guard ["start", "update", "end"].contains(event) else {
            return LiveActivityReading(view: view, malformed: .malformedPayload("aps.event is not start, update or end"))
        }
        Self.readPresentation(aps, into: &view)
        guard let contentState = aps["content-state"] else {
            guard event == "end" else {
                return LiveActivityReading(view: view, malformed: .malformedPayload("a \(event) needs aps.content-state"))
            }
            return LiveActivityReading(view: view, malformed: nil)
        }
        guard let name = contentState["name"]?.stringValue, let propsText = contentState["props"]?.stringValue,
              var props = PayloadValue(json: Array(propsText.utf8))?.objectValue
        else {
            return LiveActivityReading(view: view, malformed: .malformedPayload(
                "content-state is not {name: string, props: JSON string of an object}: ContentState would not decode"))
        }
        view.name = name
        let sealed = props.removeValue(forKey: "encrypted_data")
        let meetingID = LiveActivityNames.meetingEventID(in: props)
        var enrichment: [String: PayloadValue]?
        if let sealed {
            switch reader.decryptObject(sealed) {
            case .failure(let reason):
                view.enrichment = .fallback(reason)
            case .success(var pii):
                var avatarFile: String?
                if let meetingID, let downloader, let remote = pii["avatarUrl"]?.stringValue,
                   let fileName = LiveActivityNames.avatarFileName(meetingID),
                   let local = try? await downloader.download(remote, toFileNamed: fileName) {
                    pii["avatarUrl"] = .string(local)
                    avatarFile = local
                }
                if let meetingID { await staging.stage(pii, under: LiveActivityNames.stagingKey(meetingID)) }
                enrichment = pii
                view.enrichment = .enriched(avatarFile: avatarFile)
            }
        }
        if let meetingID, let staged = await staging.staged(under: LiveActivityNames.stagingKey(meetingID)) {
            enrichment = staged
            view.mergedStagingKey = LiveActivityNames.stagingKey(meetingID)
        }
        view.props = Self.render(props: props, enrichment: enrichment)
        return LiveActivityReading(view: view, malformed: nil)
    }

    /// The widget's merge: the enrichment's fields over the clear props.
    public static func render(props: [String: PayloadValue], enrichment: [String: PayloadValue]?) -> [String: PayloadValue] {
        props.merging(enrichment ?? [:]) { _, enriched in enriched }
    }

    static func readPresentation(_ aps: [String: PayloadValue], into view: inout LiveActivityView) {
        view.timestamp = aps["timestamp"]?.integerValue
        view.attributesType = aps["attributes-type"]?.stringValue
        view.attributes = aps["attributes"]?.objectValue
        if let alert = aps["alert"]?.objectValue {
            view.alert = LiveActivityAlert(
                title: alert["title"]?.stringValue ?? "", body: alert["body"]?.stringValue ?? "",
                sound: alert["sound"]?.stringValue)
        }
        view.staleDate = aps["stale-date"]?.integerValue
        view.dismissalDate = aps["dismissal-date"]?.integerValue
        view.relevanceScore = aps["relevance-score"]?.numberValue
    }
}
