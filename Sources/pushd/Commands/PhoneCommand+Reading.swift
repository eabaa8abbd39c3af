import PushCommandLine
import Foundation
import PushClient
import PushDelivery

/// `pushd phone show` and `watch`: payloads through `PushClient`, printed as the phone
/// would show them.
extension PhoneCommand {
    static func show(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["name", "file", "platform"], switches: ["locked"])
        let (profile, directory) = try PhoneProfile.load(name: try parsed.required("name"))
        let file = try parsed.required("file")
        let bytes: Data
        if file == "-" {
            bytes = StandardStreams.readAllInput()
        } else {
            guard let data = FileManager.default.contents(atPath: file) else { throw .failure("cannot read payload file \(file)") }
            bytes = data
        }
        let platform: DisplayedNotification.Platform?
        switch parsed["platform"] {
        case nil: platform = nil
        case let text?:
            guard let chosen = DisplayedNotification.Platform(rawValue: text) else { throw .usage("--platform must be ios or android") }
            platform = chosen
        }
        let reading = await enricher(profile, directory, locked: parsed.has("locked")).readAny(json: [UInt8](bytes), platform: platform)
        StandardStreams.write(line: PhoneRendering.render(reading, heading: "payload \(file)"))
    }

    static func watch(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(
            arguments, options: ["name", "emulator-admin", "since", "count"], switches: ["once", "locked"])
        let (profile, directory) = try PhoneProfile.load(name: try parsed.required("name"))
        let admin = try parsed.required("emulator-admin").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let cursor = try parsed.integer("since", default: 0, minimum: 0)
        let wanted = try parsed.integer("count", default: Int.max, minimum: 1)
        let tokens = Set([profile.token] + profile.extraTokens)
        let enricher = enricher(profile, directory, locked: parsed.has("locked"))
        let client: HTTP2Client
        do { client = try HTTP2Client(configuration: .init(engine: .libcurl, maximumInFlight: 1)) } catch { throw .failure("\(error)") }
        client.start()  // outside a service group the loop thread starts here
        do {
            try await poll(client: client, admin: admin, since: cursor, wanted: wanted, once: parsed.has("once"), tokens: tokens, enricher: enricher)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }

    /// Pages through `/pushes?since=` and prints this phone's pushes, until `wanted` were
    /// shown (or, with `once`, until the emulator has nothing newer).
    private static func poll(
        client: HTTP2Client, admin: String, since: Int, wanted: Int, once: Bool, tokens: Set<String>, enricher: LiveActivityEnricher
    ) async throws(CLIError) {
        var cursor = since
        var shown = 0
        while shown < wanted {
            let page: PayloadValue
            do {
                let response = try await client.send(HTTPRequest(method: .get, url: admin + "/pushes?since=\(cursor)&limit=500"))
                guard response.status == 200, let value = PayloadValue(json: response.body) else {
                    throw CLIError.failure("the emulator admin API answered \(response.status)")
                }
                page = value
            } catch let error as CLIError {
                throw error
            } catch {
                throw .failure("cannot reach the emulator admin API at \(admin): \(error)")
            }
            guard case .array(let pushes)? = page["pushes"] else { throw .failure("the emulator's /pushes answer has no pushes list") }
            for push in pushes where shown < wanted {
                guard let token = push["token"]?.stringValue, tokens.contains(token),
                      let body = push["body"]?.stringValue else { continue }
                let service = push["service"]?.stringValue ?? "?"
                let platform: DisplayedNotification.Platform = service == "fcm" ? .android : .ios
                let reading = await enricher.readAny(json: Array(body.utf8), platform: platform)
                let sequence = push["seq"]?.integerValue.map(String.init) ?? "?"
                let pushType = push["headers"]?["apns-push-type"]?.stringValue.map { ", \($0)" } ?? ""
                StandardStreams.write(line: PhoneRendering.render(
                    reading, heading: "push #\(sequence) (\(service)\(pushType), token \(token.prefix(8))…)"))
                shown += 1
            }
            cursor = page["next_since"]?.integerValue ?? cursor
            if once, pushes.isEmpty { break }
            if shown < wanted, pushes.isEmpty {
                do { try await Task.sleep(for: .milliseconds(500)) } catch { break }
            }
        }
    }

    static func enricher(_ profile: PhoneProfile, _ directory: URL, locked: Bool) -> LiveActivityEnricher {
        LiveActivityEnricher(
            keyStore: profile.keyStore(in: directory, locked: locked),
            staging: DirectoryEnrichmentStaging(directory: directory.appendingPathComponent("staging")),
            downloader: LocalFileAvatarDownloader(directory: directory.appendingPathComponent("avatars")))
    }
}

/// The twin's stand-in for the app's avatar download: it names the file the app would
/// write in the shared directory and returns its URL, without fetching anything (a
/// developer's machine need not reach the avatar host).
struct LocalFileAvatarDownloader: AvatarDownloader {
    let directory: URL

    func download(_ remoteURL: String, toFileNamed fileName: String) async throws(AvatarDownloadError) -> String {
        directory.appendingPathComponent(fileName).absoluteString
    }
}
