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
    /// Whether these bytes are exactly `text`'s UTF-8: lengths first, then the bytes.
    fileprivate func isText(_ text: StaticString) -> Bool {
        count == text.utf8CodeUnitCount && text.withUTF8Buffer { elementsEqual($0) }
    }
}

extension Device {
    /// The columns `init(row:)` reads, in order, from a source named `d` (the devices table
    /// or a subquery over it). The last is `publicKeyCheckedColumn`.
    static let columns: SQLQuery = """
        id, recipient_id, platform, app_id, environment, push_token, public_key, key_id, \
        key_registered_at, token_registered_at, app_version, \(fragment: publicKeyCheckedColumn)
        """

    /// Whether the `public_key` of the source named `d` passed the full check before
    /// (`Schemas/sql/0007_public_key_checks.sql`, the digest `DevicePublicKey.checkDigest`
    /// computes): one primary-key probe per row, against a 5 ms check per key that no
    /// worker's cache holds. Every lookup that hands keys to a worker selects it.
    static let publicKeyCheckedColumn: SQLQuery =
        "EXISTS (SELECT 1 FROM pushd_public_key_checks c WHERE c.digest = sha256(convert_to(d.public_key, 'UTF8')))"

    convenience init(row: SQLRow) throws(StoreError) {
        let (id, recipientID, platform, appID, environment, token, publicKey, keyID, keyRegisteredAt, tokenRegisteredAt, appVersion,
             publicKeyChecked) =
            try row.decode((Int64, String, Platform, String, PushEnvironment, String, String?, String?, Date?, Date, String?, Bool).self)
        self.init(
            id: id, recipientID: recipientID, platform: platform, appID: appID, environment: environment, token: token,
            publicKey: publicKey, keyID: keyID, keyRegisteredAt: keyRegisteredAt, tokenRegisteredAt: tokenRegisteredAt,
            appVersion: appVersion, publicKeyChecked: publicKeyChecked)
    }
}
