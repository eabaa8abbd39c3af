import Foundation

/// Where the app stages decrypted Live Activity enrichment for the widget extension (the
/// app group's `UserDefaults` on iOS), keyed by `LiveActivityNames.stagingKey`. The widget
/// merges it at render time, so an update that replaces the content-state without PII (APNs
/// channel updates do not wake the app) cannot wipe it.
public protocol EnrichmentStaging: Sendable {
    func stage(_ enrichment: [String: PayloadValue], under key: String) async
    func staged(under key: String) async -> [String: PayloadValue]?
}

/// Downloads an avatar into the directory the app shares with the widget extension (which
/// cannot use the network) and returns the local `file://` URL.
public protocol AvatarDownloader: Sendable {
    func download(_ remoteURL: String, toFileNamed fileName: String) async throws(AvatarDownloadError) -> String
}

public struct AvatarDownloadError: Error, Sendable, Equatable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }
}

/// The names the seed app and its widget agree on, from `props.meetingEventId`.
public enum LiveActivityNames {
    public static func stagingKey(_ meetingEventID: String) -> String { "__tt_la_enrichment_" + meetingEventID }
    /// nil when the id could not be a plain file name (`/`, `..`, control characters, over 200
    /// characters): the id comes from clear props anyone with the token can send, and must
    /// never steer the download outside the shared directory. The avatar is then not fetched.
    public static func avatarFileName(_ meetingEventID: String) -> String? {
        let safe = !meetingEventID.isEmpty && meetingEventID.count <= 200 && !meetingEventID.hasPrefix(".")
            && meetingEventID.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "_-.".unicodeScalars.contains(scalar))
            }
        return safe ? "la-avatar-" + meetingEventID : nil
    }

    /// `props.meetingEventId` as text: a string, or an integer as producers may send it.
    public static func meetingEventID(in props: [String: PayloadValue]) -> String? {
        switch props["meetingEventId"] {
        case .string(let text)? where !text.isEmpty: return text
        case let number? where number.integerValue != nil: return number.integerValue.map(String.init)
        default: return nil
        }
    }
}

/// Staging in memory (tests, and a phone twin that forgets on exit).
public actor InMemoryEnrichmentStaging: EnrichmentStaging {
    private var entries: [String: [String: PayloadValue]] = [:]

    public init() {}

    public func stage(_ enrichment: [String: PayloadValue], under key: String) {
        entries[key] = enrichment
    }

    public func staged(under key: String) -> [String: PayloadValue]? {
        entries[key]
    }
}

/// Staging as one JSON file per key in a directory, like the app group's defaults: it
/// outlives the process, so `pushd phone` renders a later update with an earlier start's
/// enrichment.
public actor DirectoryEnrichmentStaging: EnrichmentStaging {
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    public func stage(_ enrichment: [String: PayloadValue], under key: String) {
        let data = Data(PayloadValue.object(enrichment).jsonText.utf8)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: file(key).path, contents: data, attributes: [.posixPermissions: 0o600])
    }

    public func staged(under key: String) -> [String: PayloadValue]? {
        guard let data = FileManager.default.contents(atPath: file(key).path) else { return nil }
        return PayloadValue(json: data)?.objectValue
    }

    /// Keys come from untrusted props: anything but a safe file-name character is escaped.
    private func file(_ key: String) -> URL {
        let safe = key.unicodeScalars.map { scalar -> String in
            CharacterSet.alphanumerics.contains(scalar) && scalar.isASCII || scalar == "_" || scalar == "-"
                ? String(scalar) : String(format: "%%%02X", scalar.value)
        }.joined()
        return directory.appendingPathComponent(String(safe.prefix(200)) + ".json")
    }
}
