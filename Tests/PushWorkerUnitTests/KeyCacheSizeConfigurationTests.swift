import PushWorker
import Testing

@Suite("Configuration: public key cache size (no servers)")
struct KeyCacheSizeConfigurationTests {
    static let base = [
        "PUSHD_AMQP_URL": "amqp://u:p@localhost:5672/%2f", "PUSHD_DATABASE_URL": "postgresql://localhost/pushd",
        "PUSHD_ALLOW_INSECURE_TRANSPORT": "true",
    ]

    static func load(_ extra: [String: String]) throws -> WorkerConfiguration {
        try WorkerConfiguration.load(file: nil, environment: base.merging(extra) { $1 }, needsDelivery: false)
    }

    @Test("10,000 keys unless set; PUSHD_PUBLIC_KEY_CACHE_SIZE sets it; zero is a configuration problem")
    func cacheSize() throws {
        #expect(try Self.load([:]).publicKeyCacheSize == 10_000)
        #expect(try Self.load(["PUSHD_PUBLIC_KEY_CACHE_SIZE": "2500"]).publicKeyCacheSize == 2500)
        #expect { _ = try Self.load(["PUSHD_PUBLIC_KEY_CACHE_SIZE": "0"]) } throws: { error in
            "\(error)".contains("public_key_cache_size")
        }
    }
}
