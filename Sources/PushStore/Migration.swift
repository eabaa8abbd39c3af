import Foundation

/// One schema migration: the file `NNNN_name.sql` from the migrations directory.
public struct Migration: Sendable, Hashable {
    /// The four-digit prefix; migrations run in increasing order.
    public let version: Int
    /// The rest of the file name, without `.sql` (`devices` for `0001_devices.sql`).
    public let name: String
    /// The file's contents, run as one script inside one transaction.
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    public var fileName: String { String(format: "%04d_%@.sql", version, name) }

    /// Reads every `NNNN_name.sql` in `directory`, ordered by version. Other files
    /// (`README.md`, a `tests/` directory) are ignored; a `.sql` file with another name is an
    /// error, because it would otherwise be silently skipped.
    public static func load(from directory: URL) throws(MigrationError) -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw .directoryUnreadable(path: directory.path, reason: error.localizedDescription)
        }
        var migrations: [Migration] = []
        for fileName in names.sorted() where fileName.hasSuffix(".sql") {
            guard let (version, name) = parse(fileName: fileName) else { throw .badFileName(fileName) }
            let url = directory.appendingPathComponent(fileName)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw .directoryUnreadable(path: url.path, reason: "cannot read the file")
            }
            guard let sql = String(data: data, encoding: .utf8) else { throw .notUTF8(fileName) }
            migrations.append(Migration(version: version, name: name, sql: sql))
        }
        let byVersion = Dictionary(grouping: migrations, by: \.version)
        if let (version, duplicates) = byVersion.first(where: { $0.value.count > 1 }) {
            throw .duplicateVersion(version, files: duplicates.map(\.fileName).sorted())
        }
        return migrations.sorted { $0.version < $1.version }
    }

    /// `0001_devices.sql` → (1, "devices"). Names are letters, digits and underscores.
    static func parse(fileName: String) -> (Int, String)? {
        let stem = fileName.dropLast(4)
        let digits = stem.prefix(4)
        guard fileName.hasSuffix(".sql"), digits.count == 4, digits.allSatisfy(\.isASCIIDigit),
              let version = Int(digits), version > 0
        else { return nil }
        let rest = stem.dropFirst(4)
        guard rest.first == "_" else { return nil }
        let name = rest.dropFirst()
        guard !name.isEmpty, name.allSatisfy({ $0.isASCIIDigit || $0.isASCIILetter || $0 == "_" }) else { return nil }
        return (version, String(name))
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
    var isASCIILetter: Bool { isASCII && isLetter }
}
