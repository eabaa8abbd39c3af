/// One `pushd` subcommand. The executable only parses arguments and composes modules; the
/// work itself lives in the library modules.
public protocol Subcommand: Sendable {
    static var name: String { get }
    /// One line for `pushd --help`.
    static var summary: String { get }
    /// The full text for `pushd <name> --help`.
    static var help: String { get }
    static func run(_ arguments: [String]) async throws(CLIError)
}
