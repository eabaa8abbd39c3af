import Foundation

/// Where the package's built executables and the repository live, seen from a test run.
public enum BuildProducts {
    /// The `pushd` executable built beside the test bundle (`PUSHD_BINARY` overrides).
    public static var pushd: String {
        if let override = ProcessInfo.processInfo.environment["PUSHD_BINARY"] { return override }
        let directory = Bundle.main.executableURL?.deletingLastPathComponent()
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // The test runner may live inside an .xctest bundle directory on some platforms.
        var candidate = directory
        for _ in 0..<4 {
            let path = candidate.appendingPathComponent("pushd").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
            candidate.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("pushd").path
    }

    /// The repository root, found from this source file's location.
    public static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// A fresh private directory for one test's files.
    public static func temporaryDirectory(_ label: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushd-\(label)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }
}
