import Foundation
import PushModel

extension Platform: SQLEncodable, SQLDecodable {
    public static var postgresType: PostgresType { .text }

    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) {
        try rawValue.encode(into: &buffer)
    }

    /// Compared on the bytes: every device row has one, and `init(rawValue:)` built the
    /// String and then searched the cases through the runtime's generic string switch.
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Platform {
        if let bytes, type.isTextual {
            if bytes.isText("ios") { return .ios }
            if bytes.isText("android") { return .android }
        }
        let text = try String.decode(bytes, type: type)
        throw SQLDecodingError("unknown platform \"\(text)\"")
    }
}

extension PushEnvironment: SQLEncodable, SQLDecodable {
    public static var postgresType: PostgresType { .text }

    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) {
        try rawValue.encode(into: &buffer)
    }

    /// Compared on the bytes, as `Platform` is.
    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> PushEnvironment {
        if let bytes, type.isTextual {
            if bytes.isText("production") { return .production }
            if bytes.isText("sandbox") { return .sandbox }
        }
        let text = try String.decode(bytes, type: type)
        throw SQLDecodingError("unknown environment \"\(text)\"")
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes are exactly `text`'s UTF-8: lengths first, then the bytes with
    /// `memcmp` (the generic `elementsEqual` went a byte at a time, for two columns of every
    /// device row).
    fileprivate func isText(_ text: StaticString) -> Bool {
        guard count == text.utf8CodeUnitCount else { return false }
        guard let base = baseAddress else { return true }
        return memcmp(base, text.utf8Start, count) == 0
    }
}

extension Device {
    /// How many `columns` there are.
    static let columnCount = 12

    /// The columns `init(row:)` reads, in order, from a source named `d` (the devices table
    /// or a subquery over it). The last is `publicKeyCheckedColumn`.
    static let columns: SQLQuery = """
        id, recipient_id, platform, app_id, environment, push_token, public_key, key_id, \
        key_registered_at, token_registered_at, app_version, \(fragment: publicKeyCheckedColumn)
        """

    /// `columns` for a caller that may hold the key texts already (`KnownPublicKeys`): the
    /// same places, but `public_key` is NULL and `public_key_checked` false, and one more
    /// column after them, the SHA-256 of the key's text (NULL without a key). The text is
    /// two thirds of a row; a worker's cache holds most keys after its first jobs.
    static let columnsWithKeyDigest: SQLQuery = """
        id, recipient_id, platform, app_id, environment, push_token, NULL::text AS public_key, key_id, \
        key_registered_at, token_registered_at, app_version, false AS public_key_checked, \
        sha256(convert_to(d.public_key, 'UTF8')) AS public_key_digest
        """

    /// Whether the `public_key` of the source named `d` passed the full check before
    /// (`Schemas/sql/0007_public_key_checks.sql`, the digest `DevicePublicKey.checkDigest`
    /// computes): one primary-key probe per row, against a 5 ms check per key that no
    /// worker's cache holds. Every lookup that hands keys to a worker selects it.
    static let publicKeyCheckedColumn: SQLQuery =
        "EXISTS (SELECT 1 FROM pushd_public_key_checks c WHERE c.digest = sha256(convert_to(d.public_key, 'UTF8')))"

    /// Column by column, not through `decode((...).self)`: a parameter pack is decoded
    /// through the generic path, unspecialised, with a witness-table call and an exclusivity
    /// check per column, and this runs once per delivery (callgrind: 7,100 instructions per
    /// row, 4,400 column by column). The indices are `columns`' order; a query may select
    /// `extraColumns` more after them, for its own use.
    convenience init(row: SQLRow, extraColumns: Int = 0) throws(StoreError) {
        try self.init(row: row, extraColumns: extraColumns, publicKey: try row.decode(String?.self, column: 6), fromCallersCache: false)
    }

    /// `init(row:extraColumns:)` with the key text given rather than read (a row of
    /// `columnsWithKeyDigest`, whose key the caller knew: `fromCallersCache`). The recipient
    /// id is `previous`'s own string when it is the same, and the app id `app`'s
    /// (`SQLRow.decodeText` says why).
    convenience init(
        row: SQLRow, extraColumns: Int, publicKey: String?, fromCallersCache: Bool, previous: Device? = nil,
        app: AppIdentifiers? = nil
    ) throws(StoreError) {
        try row.requireColumnCount(Self.columnCount + extraColumns)
        self.init(
            id: try row.decode(Int64.self, column: 0),
            recipientID: try row.decodeText(column: 1, reusing: previous?.recipientID),
            platform: try row.decode(Platform.self, column: 2),
            appID: try row.decodeText(column: 3, reusing: app?.iosBundleID, app?.fcmProjectID),
            environment: try row.decode(PushEnvironment.self, column: 4),
            token: try row.decode(String.self, column: 5),
            publicKey: publicKey,
            keyID: try row.decode(String?.self, column: 7),
            keyRegisteredAt: try row.decode(Date?.self, column: 8),
            tokenRegisteredAt: try row.decode(Date.self, column: 9),
            appVersion: try row.decode(String?.self, column: 10),
            publicKeyChecked: try row.decode(Bool.self, column: 11),
            publicKeyFromCallersCache: fromCallersCache)
    }
}
