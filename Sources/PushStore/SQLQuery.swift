/// A statement and its parameters, written as a string literal in which every interpolated
/// value becomes a bind parameter:
///
///     let query: SQLQuery = "SELECT id FROM devices WHERE app_id = \(appID) AND recipient_id = ANY(\(recipients))"
///     // sql: SELECT id FROM devices WHERE app_id = $1 AND recipient_id = ANY($2)
///
/// SQL text can only come from string literals (the literal type is `StaticString`, so not
/// even `SQLQuery(stringLiteral:)` accepts a runtime string); an interpolated `String` is a
/// `text` parameter, never SQL. Building a statement out of untrusted input therefore cannot
/// be written by accident. The two escape hatches are explicit and safe: `\(identifier:)` for
/// names that cannot be parameters (a database in `CREATE DATABASE`), quoted and validated,
/// and `\(fragment:)` to splice another `SQLQuery`, whose parameters are renumbered.
public struct SQLQuery: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    enum Segment: Sendable {
        case sql(String)
        /// Index into `bindings`.
        case parameter(Int)
    }

    var segments: [Segment]
    /// The parameters, in `$1`, `$2`, … order.
    public private(set) var bindings: [SQLBinding]
    /// The first parameter that could not be encoded; the query is refused before sending.
    var encodingFailure: (index: Int, error: SQLEncodingError)?
    /// Whether each connection prepares this statement once and then executes it by name
    /// (see `prepared`).
    public private(set) var isPrepared = false

    public init(stringLiteral value: StaticString) {
        segments = [.sql(value.string)]
        bindings = []
    }

    public init(stringInterpolation: StringInterpolation) {
        segments = stringInterpolation.segments
        bindings = stringInterpolation.bindings
        encodingFailure = stringInterpolation.encodingFailure
    }

    /// The statement text with `$n` placeholders, as sent to the server.
    public var sql: String {
        var text = ""
        for segment in segments {
            switch segment {
            case .sql(let literal): text += literal
            case .parameter(let index): text += "$\(index + 1)"
            }
        }
        return text
    }

    /// This statement, prepared once per connection and executed by name after that: the
    /// server parses it once per session instead of on every call, and from the sixth call on
    /// uses a generic plan, planned once, if its estimated cost is not much above that of the
    /// custom plans so far (PostgreSQL's rule; otherwise it keeps planning per call). For the
    /// statements run per job, the device lookups, whose planning cost about as much as
    /// running them (0.4–0.8 ms against 0.4–1.5 ms measured for 50 recipients).
    ///
    /// Each distinct text is kept prepared for the life of the session, so mark only
    /// statements whose text is fixed in the code: values are always parameters, but
    /// `\(identifier:)` and `\(fragment:)` can vary the text. `+` and `\(fragment:)` do not
    /// carry the mark over; mark the finished query. `StoreConfiguration.preparesStatements`
    /// turns it off (a pooler that cannot carry prepared statements).
    public var prepared: SQLQuery {
        var copy = self
        copy.isPrepared = true
        return copy
    }

    /// The SQL and the parameter count, never the values: they may be tokens or keys.
    public var description: String { "\(sql) [\(bindings.count) parameters]" }

    /// `lhs` followed by `rhs`, parameters renumbered.
    public static func + (lhs: SQLQuery, rhs: SQLQuery) -> SQLQuery {
        var interpolation = StringInterpolation(literalCapacity: 0, interpolationCount: 0)
        interpolation.appendInterpolation(fragment: lhs)
        interpolation.appendInterpolation(fragment: rhs)
        return SQLQuery(stringInterpolation: interpolation)
    }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        public typealias StringLiteralType = StaticString

        var segments: [Segment] = []
        var bindings: [SQLBinding] = []
        var encodingFailure: (index: Int, error: SQLEncodingError)?

        public init(literalCapacity: Int, interpolationCount: Int) {
            segments.reserveCapacity(interpolationCount * 2 + 1)
            bindings.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: StaticString) {
            segments.append(.sql(literal.string))
        }

        /// A value: becomes the next `$n` parameter, typed `Value.postgresType`.
        public mutating func appendInterpolation<Value: SQLEncodable>(_ value: Value) {
            appendParameter(value)
        }

        private mutating func appendParameter<Value: SQLEncodable>(_ value: Value) {
            var bytes: [UInt8]?
            if !value.isSQLNull {
                var buffer: [UInt8] = []
                do {
                    try value.encode(into: &buffer)
                } catch {
                    if encodingFailure == nil { encodingFailure = (bindings.count + 1, error) }
                }
                bytes = buffer
            }
            bindings.append(SQLBinding(type: Value.postgresType, bytes: bytes))
            segments.append(.parameter(bindings.count - 1))
        }

        /// An optional value: NULL when nil. (Spelled out so the compiler knows an optional
        /// here is meant, not the debug description of one.)
        public mutating func appendInterpolation<Value: SQLEncodable>(_ value: Value?) {
            appendParameter(value)
        }

        /// A name that cannot be a parameter (database, role), double-quoted.
        public mutating func appendInterpolation(identifier: SQLIdentifier) {
            segments.append(.sql(identifier.quoted))
        }

        /// Another query spliced in; its parameters follow the ones before it.
        public mutating func appendInterpolation(fragment: SQLQuery) {
            let offset = bindings.count
            for segment in fragment.segments {
                switch segment {
                case .sql: segments.append(segment)
                case .parameter(let index): segments.append(.parameter(index + offset))
                }
            }
            if encodingFailure == nil, let failure = fragment.encodingFailure {
                encodingFailure = (failure.index + offset, failure.error)
            }
            bindings.append(contentsOf: fragment.bindings)
        }
    }
}

/// One parameter as sent: its declared type and its binary value (`nil` is SQL NULL).
public struct SQLBinding: Sendable, Equatable {
    public let type: PostgresType
    public let bytes: [UInt8]?

    public init(type: PostgresType, bytes: [UInt8]?) {
        self.type = type
        self.bytes = bytes
    }
}

extension StaticString {
    var string: String {
        withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
    }
}
