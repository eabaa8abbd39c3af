import PushCommandLine
import PushClient

/// One human-readable block per push: what the user sees, then why, if it fell back.
enum PhoneRendering {
    static func render(_ reading: PushReading, heading: String) -> String {
        var lines = ["── \(heading)"]
        switch reading {
        case .alert(let alert): lines += renderAlert(alert)
        case .liveActivity(let activity): lines += renderLiveActivity(activity)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func renderAlert(_ reading: AlertReading) -> [String] {
        let display = reading.display
        var lines = [reading.fallbackReason.map { "FALLBACK (\($0.code)): \($0.description)" }
            ?? "decrypted \(display.platform == .ios ? "by the notification service extension" : "by the messaging service")"]
        lines.append(field("title", display.title))
        if let subtitle = display.subtitle { lines.append(field("subtitle", subtitle)) }
        lines.append(field("body", display.body))
        if let sender = display.sender {
            lines.append(field("sender", "\(sender.displayName) (id \(sender.id)\(sender.avatarURL.map { ", avatar \($0)" } ?? ""))"))
        }
        if let intent = display.communicationIntent {
            lines.append(field("intent", "INSendMessageIntent conversation \(intent.conversationIdentifier)"))
        }
        let presentation = [("thread", display.threadID), ("category", display.category), ("sound", display.sound),
                            ("badge", display.badge.map(String.init)), ("channel", display.androidChannelID)]
            .compactMap { name, value in value.map { "\(name) \($0)" } }
        if !presentation.isEmpty { lines.append(field("shown as", presentation.joined(separator: ", "))) }
        if !display.data.isEmpty { lines.append(field("data", PayloadValue.object(display.data).jsonText)) }
        if let experience = display.experienceID { lines.append(field("expo", "\(experience) scope \(display.scopeKey ?? "-")")) }
        return lines
    }

    static func renderLiveActivity(_ reading: LiveActivityReading) -> [String] {
        let view = reading.view
        if let malformed = reading.malformed {
            return ["LIVE ACTIVITY NOT APPLIED (\(malformed.code)): \(malformed.description)"]
        }
        var lines = ["live activity \(view.event)\(view.name.map { " \($0)" } ?? "")\(view.timestamp.map { " at \($0)" } ?? "")"]
        switch view.enrichment {
        case .enriched(let avatar):
            lines.append(field("private", "decrypted and staged\(avatar.map { ", avatar → \($0)" } ?? "")"))
        case .notEnriched:
            lines.append(field("private", "nothing sealed in this push"))
        case .fallback(let reason):
            lines.append("FALLBACK (\(reason.code)): \(reason.description) — the widget shows its non-private layout")
        }
        if let key = view.mergedStagingKey { lines.append(field("merged", "enrichment staged under \(key)")) }
        if let alert = view.alert { lines.append(field("alert", "\(alert.title) — \(alert.body)")) }
        if let type = view.attributesType {
            lines.append(field("attributes", "\(type) \(PayloadValue.object(view.attributes ?? [:]).jsonText)"))
        }
        lines.append(field("props", PayloadValue.object(view.props).jsonText))
        let dates = [("stale", view.staleDate), ("dismissal", view.dismissalDate)].compactMap { name, value in value.map { "\(name) \($0)" } }
            + (view.relevanceScore.map { ["relevance \($0)"] } ?? [])
        if !dates.isEmpty { lines.append(field("timing", dates.joined(separator: ", "))) }
        return lines
    }

    private static func field(_ name: String, _ value: String) -> String {
        "  " + (name + ":").padding(toLength: 11, withPad: " ", startingAt: 0) + value
    }
}
