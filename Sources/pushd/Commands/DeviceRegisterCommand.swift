import PushCommandLine
import PushCrypto
import PushModel
import PushRuntime
import PushStore

/// `pushd device register`: what an app backend does when a phone reports its token and
/// key, for scripts and demos. Backends in other languages call `pushd_register_device`.
enum DeviceCommand: Subcommand {
    static let name = "device"
    static let summary = "register devices and Live Activity tokens: device register | push-to-start | activity-token | end-activity"
    static let help = """
        usage: pushd device register --recipient ID --platform ios|android --app APP
                                     [--environment sandbox|production] --token TOKEN
                                     [--public-key-file FILE] [--app-version V] [--database-url URL]
                                     [--config FILE]

        Registers (or re-registers) a push token with pushd_register_device and prints
          device_id=<id> key_id=<key id or -> key_rotated=<true|false> created=<true|false>

          --recipient        the user the device belongs to (your own id for them)
          --app              iOS bundle id, or Firebase project id for android
          --environment      APNs environment (default production; android is always production)
          --token            APNs device token (hex) or FCM registration token
          --public-key-file  the device's RSA public key as it exported it: base64 PKCS#1 (iOS),
                             base64 SubjectPublicKeyInfo (Android) or PEM. Refused if not an
                             RSA key of at least 2048 bits. Checked in full here and recorded
                             as checked (pushd_public_key_checks), so workers skip that check.
                             Without it the device only gets the fallback text.
          --database-url     default: $PUSHD_DATABASE_URL, else database_url of --config FILE
                             (default: $PUSHD_CONFIG), the workers' configuration file

        """ + liveActivityHelp

    static func run(_ arguments: [String]) async throws(CLIError) {
        if let action = arguments.first, try await runLiveActivity(action, Array(arguments.dropFirst())) { return }
        guard arguments.first == "register" else {
            throw .usage("device needs an action: register, push-to-start, activity-token or end-activity")
        }
        let parsed = try ParsedArguments(
            Array(arguments.dropFirst()),
            options: ["recipient", "platform", "app", "environment", "token", "public-key-file", "app-version", "database-url", "config"])
        guard let platform = Platform(rawValue: try parsed.required("platform")) else {
            throw .usage("--platform must be ios or android")
        }
        let environmentText = parsed["environment"] ?? "production"
        guard let environment = PushEnvironment(rawValue: environmentText) else {
            throw .usage("--environment must be sandbox or production")
        }
        let publicKey = try parsed["public-key-file"].map { path throws(CLIError) in try readTextFile(path, what: "public key") }
        if let publicKey {
            // The registering caller checks the key (the store does not link the crypto
            // module): refused here with the message the worker would give at delivery. This
            // is the full check (OpenSSL's public-key check, about 5 ms), so it is recorded
            // below and no worker runs it again for this key text.
            do { _ = try DevicePublicKey(parsing: publicKey) } catch { throw .failure(error.description) }
        }
        let registration = DeviceRegistration(
            recipientID: try parsed.required("recipient"), platform: platform, appID: try parsed.required("app"),
            environment: environment, token: try parsed.required("token"), publicKey: publicKey,
            appVersion: parsed["app-version"])

        let outcome = try await register(registration, parsed: parsed, label: "pushd.device", keyPassedFullCheck: true)
        StandardStreams.write(line:
            "device_id=\(outcome.deviceID) key_id=\(outcome.keyID ?? "-") key_rotated=\(outcome.keyRotated) created=\(outcome.created)")
    }

    /// `pushd_register_device` through a one-connection pool on the configured database: the
    /// path of `pushd device register` and `pushd phone init`.
    ///
    /// - Parameter keyPassedFullCheck: the registration's key passed the full check in this
    ///   process; its digest goes to `pushd_public_key_checks` once the device is registered.
    ///   A failure there is only a warning: the device is registered, and a worker checks the
    ///   key itself at the first push.
    static func register(
        _ registration: DeviceRegistration, parsed: ParsedArguments, label: String, keyPassedFullCheck: Bool = false
    ) async throws(CLIError) -> RegistrationOutcome {
        var configuration = try parsed.storeConfiguration()
        configuration.poolSize = 1
        let logger = Logger(label: label)
        let pool = ConnectionPool(configuration: configuration, logger: logger)
        do {
            let registry = DeviceRegistry(pool: pool)
            let outcome = try await registry.register(registration)
            if keyPassedFullCheck, let key = registration.publicKey {
                do {
                    try await registry.recordPublicKeyChecks([DevicePublicKey.checkDigest(ofKeyText: key)])
                } catch {
                    logger.warning("the key check could not be recorded; a worker will check the key again", ["error": .string(error.description)])
                }
            }
            await pool.shutdown()
            return outcome
        } catch {
            await pool.shutdown()
            throw .failure(error.description)
        }
    }
}
