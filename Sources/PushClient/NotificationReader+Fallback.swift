/// The clear parts of a push: what the phone shows when it does not decrypt.
extension NotificationReader {
    /// APNs: `aps.alert` (a dictionary, or a string that is the body), the presentation
    /// keys of `aps`, and Expo's `body` as data.
    static func apnsFallback(_ root: [String: PayloadValue]) -> DisplayedNotification {
        let aps = root["aps"]?.objectValue ?? [:]
        var display = DisplayedNotification(platform: .ios, title: "", body: "")
        switch aps["alert"] {
        case .string(let text)?: display.body = text
        case .object(let alert)?:
            display.title = alert["title"]?.stringValue ?? ""
            display.body = alert["body"]?.stringValue ?? ""
            display.subtitle = alert["subtitle"]?.stringValue
        default: break
        }
        display.threadID = aps["thread-id"]?.stringValue
        display.category = aps["category"]?.stringValue
        // A critical alert's sound is a dictionary naming the file.
        display.sound = aps["sound"]?.stringValue ?? aps["sound"]?["name"]?.stringValue
        display.badge = aps["badge"]?.integerValue
        display.data = root["body"]?.objectValue ?? [:]
        display.experienceID = root["experienceId"]?.stringValue
        display.scopeKey = root["scopeKey"]?.stringValue
        return display
    }

    /// FCM: the keys expo-notifications reads (`title`, `message`, `subtitle`, `channelId`,
    /// `sound`, `badge`, `categoryId`, `body` as a JSON string of data).
    static func fcmFallback(_ data: [String: String]) -> DisplayedNotification {
        var display = DisplayedNotification(platform: .android, title: data["title"] ?? "", body: data["message"] ?? "")
        display.subtitle = data["subtitle"]
        display.androidChannelID = data["channelId"]
        display.sound = data["sound"]
        display.badge = data["badge"].flatMap { Int($0) }
        display.category = data["categoryId"]
        display.data = data["body"].flatMap { PayloadValue(json: Array($0.utf8))?.objectValue } ?? [:]
        display.experienceID = data["experienceId"]
        display.scopeKey = data["scopeKey"]
        return display
    }

    /// The sealed content `{"title","message","body"?,"experienceId"?,"scopeKey"?}` over the
    /// fallback, as the seed's extension merges it. All or nothing: a content of another
    /// shape is refused whole, so nothing decrypted is shown beside fallback text.
    static func merge(
        _ content: [String: PayloadValue], over fallback: DisplayedNotification
    ) -> Result<DisplayedNotification, FallbackReason> {
        guard let title = content["title"]?.stringValue else {
            return .failure(.malformedContent("\"title\" is missing or not a string"))
        }
        guard let message = content["message"]?.stringValue else {
            return .failure(.malformedContent("\"message\" is missing or not a string"))
        }
        var data: [String: PayloadValue] = [:]
        switch content["body"] {
        case nil: break
        case .object(let fields)?: data = fields
        default: return .failure(.malformedContent("\"body\" is not an object"))
        }
        var optionalStrings: [String: String] = [:]
        for key in ["experienceId", "scopeKey"] {
            switch content[key] {
            case nil: break
            case .string(let text)?: optionalStrings[key] = text
            default: return .failure(.malformedContent("\"\(key)\" is not a string"))
            }
        }
        var display = fallback
        display.title = title
        display.body = message
        display.data = data
        display.sender = Sender(data["sender"])
        display.experienceID = optionalStrings["experienceId"] ?? fallback.experienceID
        display.scopeKey = optionalStrings["scopeKey"] ?? fallback.scopeKey
        return .success(display)
    }
}
