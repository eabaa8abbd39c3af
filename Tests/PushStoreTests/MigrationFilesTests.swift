import Foundation
import PushStore
import PushTestSupport
import Testing

@Suite("Migration files and where they are found (no database)")
struct MigrationFilesTests {
    private func directory(_ files: [String: String]) throws -> URL {
        let url = try BuildProducts.temporaryDirectory("migrations")
        for (name, contents) in files {
            let file = url.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try contents.write(to: file, atomically: true, encoding: .utf8)
        }
        return url
    }

    @Test("NNNN_name.sql files load in version order; other files and directories are ignored")
    func loads() throws {
        let url = try directory([
            "0002_second.sql": "SELECT 2;", "0001_first.sql": "SELECT 1;", "0010_tenth.sql": "SELECT 10;",
            "README.md": "#", "tests/devices_test.sql": "SELECT 0;",
        ])
        defer { try? FileManager.default.removeItem(at: url) }
        let migrations = try Migration.load(from: url)
        #expect(migrations.map(\.version) == [1, 2, 10])
        #expect(migrations.map(\.name) == ["first", "second", "tenth"])
        #expect(migrations[2].fileName == "0010_tenth.sql")
        #expect(migrations[0].sql == "SELECT 1;")
    }

    @Test("a .sql file with another name, or two files for one version, stop the run",
          arguments: [["1_short.sql": ""], ["0001-dash.sql": ""], ["0001_.sql": ""], ["0001_a.sql": "", "0001_b.sql": ""]])
    func refusesBadSets(files: [String: String]) throws {
        let url = try directory(files)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(throws: MigrationError.self) { try Migration.load(from: url) }
    }

    @Test("the repository's Schemas/sql is found from a build directory; --migrations and the environment come first")
    func locates() throws {
        let repository = BuildProducts.repositoryRoot
        let binary = repository.appendingPathComponent(".build-nowhere/release/pushd")
        let found = try MigrationsDirectory.locate(explicit: nil, environment: [:], executable: binary, currentDirectory: URL(fileURLWithPath: "/"))
        #expect(found.standardizedFileURL.path == repository.appendingPathComponent("Schemas/sql").standardizedFileURL.path)

        let explicit = try directory(["0001_x.sql": ""])
        defer { try? FileManager.default.removeItem(at: explicit) }
        #expect(try MigrationsDirectory.locate(explicit: explicit.path, environment: [:], executable: binary).path == explicit.path)
        #expect(try MigrationsDirectory.locate(explicit: nil, environment: ["PUSHD_MIGRATIONS_DIR": explicit.path], executable: binary).path == explicit.path)
        #expect(throws: MigrationError.self) { try MigrationsDirectory.locate(explicit: "/nonexistent/pushd/sql", environment: [:], executable: binary) }
    }

    @Test("an installed layout: share/pushd/sql beside bin/pushd")
    func installedLayout() throws {
        let prefix = try directory(["share/pushd/sql/0001_devices.sql": "SELECT 1;"])
        defer { try? FileManager.default.removeItem(at: prefix) }
        let found = try MigrationsDirectory.locate(
            explicit: nil, environment: [:], executable: prefix.appendingPathComponent("bin/pushd"), currentDirectory: URL(fileURLWithPath: "/"))
        #expect(found.path == prefix.appendingPathComponent("share/pushd/sql").standardizedFileURL.path)
        let error = #expect(throws: MigrationError.self) {
            try MigrationsDirectory.locate(explicit: nil, environment: [:], executable: URL(fileURLWithPath: "/nonexistent/bin/pushd"), currentDirectory: URL(fileURLWithPath: "/"))
        }
        #expect(error?.description.contains("--migrations") == true)
    }
}
