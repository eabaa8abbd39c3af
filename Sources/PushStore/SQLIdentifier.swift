import Foundation

/// A validated SQL identifier (database, role, table name) for the few places where a name
/// cannot be a bind parameter, such as `CREATE DATABASE \(identifier: name)`. It is always
/// double-quoted with embedded quotes doubled, so any text is only ever a name.
public struct SQLIdentifier: Sendable, Hashable, CustomStringConvertible {
    public let name: String

    /// Refuses names PostgreSQL would not keep as given: empty, containing NUL, or longer
    /// than 63 bytes (the server would silently truncate them, so two names could collide).
    public init(_ name: String) throws(SQLEncodingError) {
        guard !name.isEmpty else { throw SQLEncodingError("an identifier cannot be empty") }
        guard !name.utf8.contains(0) else { throw SQLEncodingError("an identifier cannot contain NUL") }
        guard name.utf8.count <= 63 else {
            throw SQLEncodingError("identifier is \(name.utf8.count) bytes; PostgreSQL keeps at most 63")
        }
        self.name = name
    }

    /// `"name"`, with `"` doubled.
    public var quoted: String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    public var description: String { quoted }
}
