import CPostgreSQL

/// An error reported by the server for one statement, with the fields PostgreSQL sends.
/// `sqlState` is the stable, documented code (Appendix A of the PostgreSQL manual);
/// `message` is for people.
public struct ServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Five characters, e.g. `23505` unique_violation, `22023` invalid_parameter_value.
    /// `nil` only when libpq produced the error itself without a code.
    public let sqlState: String?
    /// `ERROR`, `FATAL` or `PANIC` (not localized).
    public let severity: String?
    public let message: String
    public let detail: String?
    public let hint: String?
    /// The constraint, table and column involved, when the server names them.
    public let constraint: String?
    public let table: String?
    public let column: String?
    /// The server function that raised it (not translated, unlike `message`).
    public let sourceFunction: String?

    public init(
        sqlState: String?, severity: String? = "ERROR", message: String, detail: String? = nil,
        hint: String? = nil, constraint: String? = nil, table: String? = nil, column: String? = nil,
        sourceFunction: String? = nil
    ) {
        self.sqlState = sqlState
        self.severity = severity
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.table = table
        self.column = column
        self.sourceFunction = sourceFunction
    }

    /// Transient conditions that a later attempt can get past: serialization failure and
    /// deadlock (class 40), lock not available, insufficient resources (class 53), statement
    /// timeout or cancel (`57014`), server shutting down or starting (`57P01`–`57P03`), and
    /// connection exceptions (class 08).
    public var isRetryable: Bool {
        guard let sqlState else { return false }
        if sqlState.hasPrefix("40") || sqlState.hasPrefix("53") || sqlState.hasPrefix("08") { return true }
        return ["55P03", "57014", "57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// Whether this error means the session is gone: connection exceptions and shutdowns.
    var endsSession: Bool {
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// The session has no prepared statement under that name (26000
    /// invalid_sql_statement_name: it was deallocated).
    var isMissingPreparedStatement: Bool { sqlState == "26000" }

    /// 0A000 "cached plan must not change result type": a table the prepared statement reads
    /// changed shape since it was prepared. Told apart from other 0A000 errors by the server
    /// function that raises it, which is not translated (the message is, with `lc_messages`).
    var isStalePreparedStatement: Bool {
        sqlState == "0A000" && (sourceFunction == "RevalidateCachedQuery" || message.contains("cached plan"))
    }

    /// What logs, events and dead-letter reasons may carry: never `detail`, which can quote
    /// whole rows ("Failing row contains (…)", "Key (push_token)=(…)"), tokens and keys
    /// included; the constraint's name says which rule failed.
    public var description: String {
        var text = "PostgreSQL \(severity ?? "ERROR")"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let constraint { text += " (constraint \(constraint))" }
        if let hint { text += " (hint: \(hint))" }
        return text
    }
}

extension ServerError {
    /// Reads the error fields of a failed result; `fallback` is the connection's message,
    /// used when the result carries none (errors libpq raised itself).
    init(result: OpaquePointer, fallback: String) {
        func field(_ code: UInt8) -> String? {
            guard let pointer = PQresultErrorField(result, Int32(code)) else { return nil }
            return String(cString: pointer)
        }
        let primary = field(UInt8(ascii: "M"))
        let whole = PQresultErrorMessage(result).map { String(cString: $0) } ?? ""
        let message = primary ?? (whole.isEmpty ? fallback : whole)
        self.init(
            sqlState: field(UInt8(ascii: "C")),
            severity: field(UInt8(ascii: "V")) ?? field(UInt8(ascii: "S")),
            message: message.trimmingTrailingNewlines(),
            detail: field(UInt8(ascii: "D")),
            hint: field(UInt8(ascii: "H")),
            constraint: field(UInt8(ascii: "n")),
            table: field(UInt8(ascii: "t")),
            column: field(UInt8(ascii: "c")),
            sourceFunction: field(UInt8(ascii: "R")))
    }
}

extension String {
    /// libpq ends its messages with a newline, sometimes several lines; logs want one line.
    func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while let last = text.last, last.isNewline || last == " " { text.removeLast() }
        return text.split(whereSeparator: \.isNewline).joined(separator: " / ")
    }
}
