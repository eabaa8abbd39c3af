import PushModel
import PushStore
import Testing

/// A device row's platform and environment columns, decoded on their bytes (no server
/// needed: the decoders take what libpq hands over).
@Suite("Device columns decoded")
struct DeviceColumnDecodingTests {
    private func decode<Value: SQLDecodable>(_ text: String?, as type: Value.Type, postgresType: PostgresType = .text) throws -> Value {
        guard let text else { return try Value.decode(nil, type: postgresType) }
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBytes { raw in try Value.decode(raw, type: postgresType) }
    }

    @Test("every platform and environment the schema allows, from text and varchar")
    func known() throws {
        for type in [PostgresType.text, .varchar] {
            for platform in Platform.allCases { #expect(try decode(platform.rawValue, as: Platform.self, postgresType: type) == platform) }
            for environment in PushEnvironment.allCases {
                #expect(try decode(environment.rawValue, as: PushEnvironment.self, postgresType: type) == environment)
            }
        }
    }

    @Test("anything else is refused with the value named, as before", arguments: ["", "IOS", "ios ", "io", "androidx", "Sandbox", "prod"])
    func unknown(_ text: String) {
        let platform = #expect(throws: SQLDecodingError.self) { try decode(text, as: Platform.self) }
        #expect(platform?.reason == "unknown platform \"\(text)\"")
        let environment = #expect(throws: SQLDecodingError.self) { try decode(text, as: PushEnvironment.self) }
        #expect(environment?.reason == "unknown environment \"\(text)\"")
    }

    @Test("NULL and a non-text type are refused")
    func notText() {
        #expect(throws: SQLDecodingError.self) { try decode(nil, as: Platform.self) }
        #expect(throws: SQLDecodingError.self) { try decode("ios", as: Platform.self, postgresType: .int4) }
        #expect(throws: SQLDecodingError.self) { try decode("sandbox", as: PushEnvironment.self, postgresType: .bytea) }
    }
}
