import Foundation
import PushCommandLine
import PushRuntime
import PushStore

/// `pushd migrate`: brings the database schema up to date. Every worker may run it at start:
/// concurrent runs queue on an advisory lock and the later ones find nothing to do.
enum MigrateCommand: Subcommand {
    static let name = "migrate"
    static let summary = "apply the PostgreSQL schema migrations (idempotent, safe concurrently)"
    static let help = """
        usage: pushd migrate [--database-url URL] [--config FILE] [--migrations DIR] [--lock-timeout SECONDS]

        Applies the pending Schemas/sql migrations (NNNN_name.sql, in order), each in its own
        transaction, recording them in pushd_schema_migrations. Running it again does nothing;
        several processes running it at once queue on an advisory lock. It refuses to run if a
        migration that was already applied has been edited since (SHA-256 recorded).

          --database-url   libpq URL, e.g. postgresql://user:password@host:5432/pushd
                           (default: $PUSHD_DATABASE_URL). TLS: add ?sslmode=verify-full
                           &sslrootcert=/path/ca.pem in production (libpq's default is prefer).
          --config         the workers' configuration file (default: $PUSHD_CONFIG): its
                           database_url is used when neither of the above is given
          --migrations     directory of NNNN_name.sql files (default: $PUSHD_MIGRATIONS_DIR,
                           else ../share/pushd/sql next to the executable, else Schemas/sql of
                           the repository the executable was built in)
          --lock-timeout   seconds to wait for another process's run (default 300)
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["database-url", "config", "migrations", "lock-timeout"])
        let configuration = try parsed.storeConfiguration()
        let lockTimeout = try parsed.double("lock-timeout", default: 300)
        let migrations: [Migration]
        let directory: URL
        do {
            directory = try MigrationsDirectory.locate(explicit: parsed["migrations"])
            migrations = try Migration.load(from: directory)
        } catch {
            throw .failure(error.description)
        }
        guard !migrations.isEmpty else { throw .failure("no NNNN_name.sql migrations in \(directory.path)") }

        var migrator = Migrator(configuration: configuration)
        migrator.lockTimeout = .milliseconds(Int64(lockTimeout * 1000))
        let report: Migrator.Report
        do {
            report = try await migrator.migrate(migrations)
        } catch {
            throw .failure(error.description)
        }
        for applied in report.applied {
            let file = Migration(version: applied.version, name: applied.name, sql: "").fileName
            StandardStreams.write(line: "applied \(file) (\(applied.duration.formatted(.units(allowed: [.milliseconds]))))")
        }
        if !report.unknownApplied.isEmpty {
            let versions = report.unknownApplied.map(String.init).joined(separator: ", ")
            StandardStreams.writeError(line: "note: the database has migrations this pushd does not know (\(versions)); a newer version applied them")
        }
        StandardStreams.write(line:
            "\(configuration.redactedDescription) is up to date: \(migrations.count) migrations from \(directory.path), \(report.applied.count) applied now")
    }
}
