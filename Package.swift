// swift-tools-version:6.0
import PackageDescription

/// Every Swift target is built in the Swift 6 language mode, which turns on complete
/// strict concurrency checking; the loop at the bottom adds the extra settings to each.
let package = Package(
    name: "pushd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pushd", targets: ["pushd"]),
        .library(name: "PushCrypto", targets: ["PushCrypto"]),
        .library(name: "PushClient", targets: ["PushClient"]),
    ],
    targets: [
        // C boundary: the Debian libraries, imported unchanged through module maps.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPostgreSQL", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CRabbitMQ", pkgConfig: "librabbitmq", providers: [.apt(["librabbitmq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // C shims: what does not import into Swift (macros, variadic functions).
        .target(name: "COpenSSLShims", dependencies: ["COpenSSL"]),
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        .target(name: "CRabbitMQShims", dependencies: ["CRabbitMQ"]),

        // Swift modules, one concern each.
        .target(name: "PushCrypto", dependencies: ["COpenSSL", "COpenSSLShims"]),
        .target(name: "PushRuntime"),
        .target(name: "PushModel", dependencies: ["PushRuntime"]),
        .target(name: "PushMetrics", dependencies: ["PushRuntime"]),
        .target(name: "PushStore", dependencies: ["CPostgreSQL", "PushCrypto", "PushRuntime"]),
        .target(name: "PushQueue", dependencies: ["CRabbitMQ", "CRabbitMQShims", "PushRuntime"]),
        .target(name: "PushDelivery", dependencies: ["CCurl", "CCurlShims", "PushCrypto", "PushModel", "PushRuntime"]),
        .target(
            name: "PushWorker",
            dependencies: ["PushCrypto", "PushRuntime", "PushMetrics", "PushModel", "PushStore", "PushQueue", "PushDelivery"]),
        // The phone side: no server module. OpenSSL (PushCrypto) where it exists; on Apple
        // platforms Security and CryptoKit instead.
        .target(
            name: "PushClient",
            dependencies: [.target(name: "PushCrypto", condition: .when(platforms: [.linux, .android]))]),
        .executableTarget(
            name: "pushd",
            dependencies: ["PushClient", "PushCrypto", "PushRuntime", "PushMetrics", "PushModel", "PushStore", "PushQueue", "PushDelivery", "PushWorker"]
        ),

        .target(name: "PushTestSupport", dependencies: ["PushRuntime", "PushDelivery", "PushStore"]),

        .testTarget(name: "PushCryptoTests", dependencies: ["PushCrypto"]),
        .testTarget(name: "PushClientTests", dependencies: ["PushClient", "PushCrypto", "PushModel"]),
        .testTarget(name: "PushRuntimeTests", dependencies: ["PushRuntime"]),
        .testTarget(name: "PushModelTests", dependencies: ["PushModel", "PushCrypto"]),
        .testTarget(name: "PushMetricsTests", dependencies: ["PushMetrics", "PushRuntime"]),
        .testTarget(name: "PushStoreTests", dependencies: ["PushStore", "PushCrypto", "PushTestSupport"]),
        .testTarget(name: "PushQueueTests", dependencies: ["PushQueue", "PushRuntime", "PushTestSupport"]),
        .testTarget(
            name: "PushWorkerTests",
            dependencies: ["PushWorker", "PushStore", "PushQueue", "PushCrypto", "PushModel", "PushTestSupport", "PushClient"]),
        .testTarget(name: "PushDeliveryTests", dependencies: ["PushDelivery", "PushModel", "PushCrypto", "PushTestSupport"]),
        .testTarget(name: "CBoundaryTests", dependencies: ["CPostgreSQL", "CRabbitMQ", "CRabbitMQShims", "CCurl", "CCurlShims", "COpenSSL"]),
        .testTarget(name: "CLITests", dependencies: ["PushCrypto", "PushTestSupport"], exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)

let cTargets: Set<String> = ["COpenSSLShims", "CCurlShims", "CRabbitMQShims"]
for target in package.targets where target.type != .system && !cTargets.contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("ExistentialAny")]
}
