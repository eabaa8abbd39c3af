import PushCommandLine

/// `pushd phone`: a phone twin. It keeps a device key pair, registers like the app does,
/// and reads payloads through `PushClient` exactly as the iOS extension, the Android
/// service and the Live Activity enricher do — so a backend developer sees what a user
/// will see, and every payload the cluster sends can be checked the way a phone reads it.
enum PhoneCommand: Subcommand {
    static let name = "phone"
    static let summary = "a phone twin: keys, registration, and what a push would display (init, rotate, show, watch)"
    static let help = """
        usage: pushd phone init   --name N --format ios|android --recipient R --app APP --token T
                                  [--environment sandbox|production] [--extra-token T] [--offline]
                                  [--private-key PEM] [--force] [--database-url URL]
               pushd phone rotate --name N [--offline] [--database-url URL]
               pushd phone show   --name N --file PAYLOAD|- [--platform ios|android] [--locked]
               pushd phone watch  --name N --emulator-admin URL [--since SEQ] [--once] [--count K] [--locked]

        init     generates an RSA-2048 key pair as the app does at first launch (public key
                 exported as iOS base64 PKCS#1 or Android base64 SubjectPublicKeyInfo) and
                 registers token and key with pushd_register_device, the path of
                 `pushd device register` (--offline: keys only). --extra-token adds a token
                 that also reaches this phone (a Live Activity push-to-start token) for watch.
                 --private-key imports an existing key (a demo device's from `pushd keygen`)
                 instead of generating one; --force replaces an existing phone of that name.
        rotate   a new key pair, registered; the old private keys are kept, so pushes sealed
                 for them (their kid) still open.
        show     prints what the phone would display for one payload: an APNs payload
                 (alert or Live Activity), an FCM v1 request body or an FCM data map. When it
                 falls back it says why (legacy, no key, locked, wrong key, authentication
                 failed, malformed ...). --locked reads as before the first unlock.
        watch    polls the emulator's admin API (GET /pushes?since=) for pushes to this
                 phone's tokens and prints each as the phone would show it, one block per
                 push. --once prints what is there and exits; --count exits after K pushes.

        State: ${PUSHD_STATE_DIR:-~/.pushd-local}/phone/<name>/ (private keys 0600; never printed).
        Live Activity enrichment is staged in its staging/ directory, so a later update is
        rendered with an earlier start's PII. Avatars are not fetched: the twin shows the
        local file URL the app would write (la-avatar-<meetingEventId>).
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        guard let action = arguments.first else { throw .usage("phone needs an action: init, rotate, show or watch") }
        let rest = Array(arguments.dropFirst())
        switch action {
        case "init": try await initialize(rest)
        case "rotate": try await rotate(rest)
        case "show": try await show(rest)
        case "watch": try await watch(rest)
        default: throw .usage("unknown phone action \"\(action)\": init, rotate, show or watch")
        }
    }
}
