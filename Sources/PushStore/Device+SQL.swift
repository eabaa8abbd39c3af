import Foundation
import PushModel

extension Platform: SQLEncodable, SQLDecodable {
    public static var postgresType: PostgresType { .text }

    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) {
        try rawValue.encode(into: &buffer)
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> Platform {
        let text = try String.decode(bytes, type: type)
        guard let platform = Platform(rawValue: text) else { throw SQLDecodingError("unknown platform \"\(text)\"") }
        return platform
    }
}

extension PushEnvironment: SQLEncodable, SQLDecodable {
    public static var postgresType: PostgresType { .text }

    public func encode(into buffer: inout [UInt8]) throws(SQLEncodingError) {
        try rawValue.encode(into: &buffer)
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer?, type: PostgresType) throws(SQLDecodingError) -> PushEnvironment {
        let text = try String.decode(bytes, type: type)
        guard let environment = PushEnvironment(rawValue: text) else { throw SQLDecodingError("unknown environment \"\(text)\"") }
        return environment
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
