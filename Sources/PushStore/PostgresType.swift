/// A PostgreSQL type OID: what a parameter is declared as and what a result column holds.
/// Only the types this package encodes or decodes are named; any other OID still prints.
public struct PostgresType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let bool = PostgresType(rawValue: 16)
    public static let bytea = PostgresType(rawValue: 17)
    public static let char = PostgresType(rawValue: 18)
    public static let name = PostgresType(rawValue: 19)
    public static let int8 = PostgresType(rawValue: 20)
    public static let int2 = PostgresType(rawValue: 21)
    public static let int4 = PostgresType(rawValue: 23)
    public static let text = PostgresType(rawValue: 25)
    public static let oid = PostgresType(rawValue: 26)
    public static let json = PostgresType(rawValue: 114)
    public static let float4 = PostgresType(rawValue: 700)
    public static let float8 = PostgresType(rawValue: 701)
    public static let unknown = PostgresType(rawValue: 705)
    public static let bpchar = PostgresType(rawValue: 1042)
    public static let varchar = PostgresType(rawValue: 1043)
    public static let timestamp = PostgresType(rawValue: 1114)
    public static let timestamptz = PostgresType(rawValue: 1184)
    public static let void = PostgresType(rawValue: 2278)
    public static let jsonb = PostgresType(rawValue: 3802)

    public static let boolArray = PostgresType(rawValue: 1000)
    public static let byteaArray = PostgresType(rawValue: 1001)
    public static let int2Array = PostgresType(rawValue: 1005)
    public static let int4Array = PostgresType(rawValue: 1007)
    public static let textArray = PostgresType(rawValue: 1009)
    public static let int8Array = PostgresType(rawValue: 1016)
    public static let float8Array = PostgresType(rawValue: 1022)
    public static let timestamptzArray = PostgresType(rawValue: 1185)

    private static let names: [UInt32: String] = [
        16: "boolean", 17: "bytea", 18: "\"char\"", 19: "name", 20: "bigint", 21: "smallint", 23: "integer",
        25: "text", 26: "oid", 114: "json", 700: "real", 701: "double precision", 705: "unknown",
        1042: "character", 1043: "character varying", 1114: "timestamp", 1184: "timestamptz",
        2278: "void", 3802: "jsonb", 1000: "boolean[]", 1001: "bytea[]", 1005: "smallint[]",
        1007: "integer[]", 1009: "text[]", 1016: "bigint[]", 1022: "double precision[]", 1185: "timestamptz[]",
    ]

    public var description: String { Self.names[rawValue] ?? "type oid \(rawValue)" }

    /// Types whose binary form is the text itself (UTF-8, the client encoding we insist on).
    var isTextual: Bool {
        [Self.text, .varchar, .bpchar, .name, .unknown, .json, .char].contains(self)
    }
}

/// PostgreSQL's binary timestamp: microseconds since 2000-01-01 00:00:00 UTC.
enum PostgresEpoch {
    /// Seconds from 1970-01-01 to 2000-01-01.
    static let unixOffset: Double = 946_684_800
}
