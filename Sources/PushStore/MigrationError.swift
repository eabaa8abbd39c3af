/// Why migrations did not run. Each case names the file or version involved.
public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    case directoryNotFound(tried: [String])
    case directoryUnreadable(path: String, reason: String)
    /// A `.sql` file not named `NNNN_name.sql`.
    case badFileName(String)
    case notUTF8(String)
    case duplicateVersion(Int, files: [String])
    /// An applied migration's file changed since it ran. Applied files are never edited:
    /// changes go in a new file.
    case checksumMismatch(version: Int, name: String, applied: String, onDisk: String)
    /// The file for an applied version now has another name.
    case renamed(version: Int, applied: String, onDisk: String)
    /// A migration older than one already applied has not run: applying it now could
    /// depend on a schema it never saw. Refused rather than guessed.
    case outOfOrder(pending: Int, newestApplied: Int)
    /// Another process held the migration lock longer than the lock timeout.
    case lockTimeout(Duration)
    /// The script left the transaction (it contains `COMMIT` or `ROLLBACK`).
    case leftTransaction(version: Int, name: String)
    /// The migration failed and was rolled back; nothing of it was applied.
    case failed(version: Int, name: String, StoreError)
    case store(StoreError)

    public var isRetryable: Bool {
        switch self {
        case .lockTimeout: return true
        case .store(let error), .failed(_, _, let error): return error.isRetryable
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .directoryNotFound(let tried):
            return "no migrations directory found; pass --migrations DIR or set PUSHD_MIGRATIONS_DIR (tried: \(tried.joined(separator: ", ")))"
        case .directoryUnreadable(let path, let reason):
            return "cannot read migrations at \(path): \(reason)"
        case .badFileName(let file):
            return "\(file): migration files must be named NNNN_name.sql (4 digits, letters, digits, underscores)"
        case .notUTF8(let file):
            return "\(file) is not UTF-8"
        case .duplicateVersion(let version, let files):
            return "migration version \(version) appears in several files: \(files.joined(separator: ", "))"
        case .checksumMismatch(let version, let name, let applied, let onDisk):
            return "migration \(version) (\(name)) was changed after it was applied (applied sha256 \(applied), file sha256 \(onDisk)); applied migrations must never be edited: put the change in a new file"
        case .renamed(let version, let applied, let onDisk):
            return "migration \(version) was applied as \"\(applied)\" but the file is now named \"\(onDisk)\""
        case .outOfOrder(let pending, let newest):
            return "migration \(pending) has not been applied but \(newest) has; refusing to apply migrations out of order"
        case .lockTimeout(let timeout):
            return "another process held the migration lock for more than \(timeout)"
        case .leftTransaction(let version, let name):
            return "migration \(version) (\(name)) ended its transaction itself (COMMIT/ROLLBACK in the file); migrations must not contain transaction control"
        case .failed(let version, let name, let error):
            return "migration \(version) (\(name)) failed and was rolled back: \(error)"
        case .store(let error):
            return error.description
        }
    }
}
