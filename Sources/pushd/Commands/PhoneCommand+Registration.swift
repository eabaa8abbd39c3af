import PushCommandLine
import Foundation
import PushCrypto
import PushRuntime
import PushModel
import PushStore

/// `pushd phone init` and `rotate`: keys as the app makes them, registration as the app's
/// backend does it (`pushd_register_device`, the path of `pushd device register`).
extension PhoneCommand {
    static func initialize(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(
            arguments, options: ["name", "format", "recipient", "app", "token", "environment", "extra-token", "private-key", "database-url"],
            switches: ["offline", "force"])
        let name = try parsed.required("name")
        let format = try parsed.required("format")
        guard format == "ios" || format == "android" else { throw .usage("--format must be ios or android") }
        let environment = parsed["environment"] ?? "production"
        guard PushEnvironment(rawValue: environment) != nil else { throw .usage("--environment must be sandbox or production") }
        let directory = try PhoneProfile.directory(name: name)
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent("phone.json").path), !parsed.has("force") {
            throw .failure("phone \"\(name)\" exists in \(directory.path); use `pushd phone rotate`, or --force to replace it")
        }
        var imported: DevicePrivateKey?
        if let path = parsed["private-key"] {
            do { imported = try DevicePrivateKey(pem: try readTextFile(path, what: "private key")) } catch let error as CLIError {
                throw error
            } catch {
                throw .failure("\(error)")
            }
        }
        let key = try PhoneProfile.generateKey(platform: format, in: directory, importing: imported)
        var profile = PhoneProfile(
            name: name, platform: format, recipient: try parsed.required("recipient"), app: try parsed.required("app"),
            environment: environment, token: try parsed.required("token"), extraTokens: parsed["extra-token"].map { [$0] } ?? [],
            deviceID: nil, currentKeyID: key.keyID)
        if !parsed.has("offline") {
            profile.deviceID = try await register(profile, publicKey: key.publicKey, expectedKeyID: key.keyID, parsed: parsed)
        }
        try profile.save(in: directory)
        StandardStreams.write(line: describe(profile, directory: directory))
    }

    static func rotate(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["name", "database-url"], switches: ["offline"])
        var (profile, directory) = try PhoneProfile.load(name: try parsed.required("name"))
        let key = try PhoneProfile.generateKey(platform: profile.platform, in: directory)
        if !parsed.has("offline") {
            profile.deviceID = try await register(profile, publicKey: key.publicKey, expectedKeyID: key.keyID, parsed: parsed)
        }
        profile.currentKeyID = key.keyID
        try profile.save(in: directory)
        StandardStreams.write(line: describe(profile, directory: directory))
    }

    static func describe(_ profile: PhoneProfile, directory: URL) -> String {
        "phone \(profile.name): \(profile.platform), token \(profile.token.prefix(8))…, key_id \(profile.currentKeyID), "
            + "device_id \(profile.deviceID.map(String.init) ?? "- (not registered)"), state \(directory.path)"
    }

    /// Registers token and key; the server's key id must be the one the phone computed, or
    /// the phone could not pick its key by `kid`.
    static func register(
        _ profile: PhoneProfile, publicKey: String, expectedKeyID: String, parsed: ParsedArguments
    ) async throws(CLIError) -> Int64 {
        // The phone made this key itself, so it needs no validation here (`pushd device
        // register` checks keys that come from elsewhere).
        let registration = DeviceRegistration(
            recipientID: profile.recipient, platform: profile.platform == "ios" ? .ios : .android, appID: profile.app,
            environment: profile.platform == "ios" ? PushEnvironment(rawValue: profile.environment) ?? .production : nil,
            token: profile.token,
            publicKey: publicKey)
        let outcome = try await DeviceCommand.register(registration, parsed: parsed, label: "pushd.phone")
        guard outcome.keyID == expectedKeyID else {
            throw .failure("the server's key_id \(outcome.keyID ?? "-") differs from the phone's \(expectedKeyID)")
        }
        return outcome.deviceID
    }
}
