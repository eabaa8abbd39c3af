import Foundation

/// Where `pushd migrate` finds the `NNNN_name.sql` files.
///
/// The migrations are read from a directory rather than compiled into the binary: they are
/// the contract producers in other languages read too (`Schemas/sql/README.md`), operators
/// can inspect exactly what will run, and there is no generated copy that could drift from
/// the files. A SwiftPM resource bundle would also be a directory, only one whose location
/// depends on the build layout and breaks when the binary alone is copied. Deployment ships
/// the files beside the binary instead (`bin/pushd` + `share/pushd/sql/`), like any
/// Unix tool's data files.
///
/// Searched in order:
/// 1. `--migrations DIR`;
/// 2. `PUSHD_MIGRATIONS_DIR`;
/// 3. `../share/pushd/sql` next to the executable (an installed layout);
/// 4. `Schemas/sql` in the repository the executable was built in (an ancestor of its
///    directory: `.build/release/pushd`), then in the current directory or its ancestors.
public enum MigrationsDirectory {
    public static func locate(
        explicit: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        executable: URL? = Bundle.main.executableURL,
        currentDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    ) throws(MigrationError) -> URL {
        if let explicit {
            return try existing(URL(fileURLWithPath: explicit), from: "--migrations")
        }
        if let fromEnvironment = environment["PUSHD_MIGRATIONS_DIR"], !fromEnvironment.isEmpty {
            return try existing(URL(fileURLWithPath: fromEnvironment), from: "PUSHD_MIGRATIONS_DIR")
        }
        var tried: [String] = []
        var candidates: [URL] = []
        if let executable {
            let directory = executable.resolvingSymlinksInPath().deletingLastPathComponent()
            candidates.append(directory.appendingPathComponent("../share/pushd/sql").standardizedFileURL)
            candidates += ancestors(of: directory).map { $0.appendingPathComponent("Schemas/sql") }
        }
        candidates += ancestors(of: currentDirectory).map { $0.appendingPathComponent("Schemas/sql") }
        for candidate in candidates {
            tried.append(candidate.path)
            if containsMigrations(candidate) { return candidate }
        }
        throw .directoryNotFound(tried: tried)
    }

    private static func existing(_ url: URL, from source: String) throws(MigrationError) -> URL {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .directoryUnreadable(path: url.path, reason: "\(source) does not name a directory")
        }
        return url
    }

    private static func ancestors(of directory: URL) -> [URL] {
        var result: [URL] = []
        var current = directory.standardizedFileURL
        for _ in 0..<8 {
            result.append(current)
            let parent = current.deletingLastPathComponent()
            if parent.path == current.path { break }
            current = parent
        }
        return result
    }

    private static func containsMigrations(_ directory: URL) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return false }
        return names.contains { Migration.parse(fileName: $0) != nil }
    }
}
