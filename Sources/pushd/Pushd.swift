import Foundation
import PushBenchmarks
import PushCommandLine

/// The one executable. It parses the subcommand and hands over; every capability lives in
/// a library module so that other Swift programs can use it without the CLI.
@main
struct Pushd {
    static let subcommands: [any Subcommand.Type] = [
        KeygenCommand.self, EncryptCommand.self, DecryptCommand.self, BenchCommand.self,
        MigrateCommand.self, DeviceCommand.self, ChannelCommand.self, WorkerCommand.self, CleanupCommand.self, EnqueueCommand.self,
        PhoneCommand.self,
    ]

    static var usage: String {
        let width = subcommands.map { $0.name.count }.max() ?? 0
        let lines = subcommands.map { "  " + $0.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.summary }
        return """
            usage: pushd <command> [options]

            End-to-end encrypted push notification delivery (APNs, FCM).

            commands:
            \(lines.joined(separator: "\n"))

            Run `pushd <command> --help` for a command's options.
            """
    }

    static func main() async {
        unblockStopSignals()
        // A peer that hangs up (a metrics scraper, a broker, APNs) must cost one write's
        // EPIPE, never the process: every socket write also passes MSG_NOSIGNAL where the
        // library allows it, and this covers the ones that do not (OpenSSL's, libpq's).
        signal(SIGPIPE, SIG_IGN)
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first else {
            StandardStreams.writeError(line: usage)
            exit(64)
        }
        arguments.removeFirst()
        if name == "--help" || name == "-h" || name == "help" {
            print(usage)
            exit(0)
        }
        guard let command = subcommands.first(where: { $0.name == name }) else {
            StandardStreams.writeError(line: "pushd: unknown command \"\(name)\"; see `pushd --help`")
            exit(64)
        }
        if arguments.contains("--help") || arguments.contains("-h") {
            print(command.help)
            exit(0)
        }
        do {
            try await command.run(arguments)
        } catch {
            switch error {
            case .usage(let message):
                StandardStreams.writeError(line: "pushd \(name): \(message) (see `pushd \(name) --help`)")
                exit(64)
            case .failure(let message):
                StandardStreams.writeError(line: "pushd \(name): \(message)")
                exit(1)
            }
        }
    }

    /// A parent may start us with SIGTERM/SIGINT blocked (Foundation's `Process` passes on
    /// the spawning thread's mask); graceful shutdown depends on receiving them.
    static func unblockStopSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }
}
