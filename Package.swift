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
        // For Swift producers: links RabbitMQ (and Foundation) only, not libcurl or libpq.
        .library(name: "PushProducer", targets: ["PushProducer"]),
        // The phone side, for apps and for checking what the cluster sends.
        .library(name: "PushClient", targets: ["PushClient"]),
    ],
    targets: [
        // C boundary: the Debian libraries, imported unchanged through module maps.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPostgreSQL", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CRabbitMQ", pkgConfig: "librabbitmq", providers: [.apt(["librabbitmq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),

        // C shims: what does not import into Swift (macros, variadic functions).
        .target(name: "COpenSSLShims", dependencies: ["COpenSSL"]),
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        .target(name: "CRabbitMQShims", dependencies: ["CRabbitMQ"]),
        // The executable's allocator (see allocator.c): linked by `pushd` only, so the
        // libraries' users keep their own.
        .target(name: "CJemalloc", linkerSettings: [.linkedLibrary("jemalloc")]),

        // Foundations: no C library beyond OpenSSL for the crypto module.
        .target(name: "PushRuntime"),
        .target(name: "PushCrypto", dependencies: ["COpenSSL", "COpenSSLShims"]),
        .target(name: "PushModel", dependencies: ["PushRuntime"]),
        .target(name: "PushMetrics", dependencies: ["PushRuntime"]),

        // One client library each.
        .target(name: "PushStore", dependencies: ["CPostgreSQL", "PushModel", "PushRuntime"]),
        .target(name: "PushTLS", dependencies: ["COpenSSL", "PushCrypto"]),
        .target(name: "PushQueue", dependencies: ["COpenSSL", "CRabbitMQ", "CRabbitMQShims", "PushRuntime", "PushTLS"]),
        .target(
            name: "PushDelivery",
            dependencies: ["CCurl", "CCurlShims", "CNGHTTP2", "COpenSSL", "COpenSSLShims", "PushCrypto", "PushRuntime", "PushTLS"]),

        // What runs: the producer API, the cleanup consumer, the worker (which also
        // assembles both services from configuration).
        .target(name: "PushProducer", dependencies: ["PushModel", "PushQueue"]),
        .target(name: "PushCleanup", dependencies: ["PushMetrics", "PushModel", "PushQueue", "PushRuntime", "PushStore"]),
        .target(
            name: "PushWorker",
            dependencies: [
                "PushCleanup", "PushCrypto", "PushDelivery", "PushMetrics", "PushModel", "PushQueue", "PushRuntime", "PushStore",
            ]),

        // The command line: shared argument parsing, the benchmarks, and the executable
        // that only composes.
        // The phone side: no server module. OpenSSL (PushCrypto) where it exists; on Apple
        // platforms Security and CryptoKit instead.
        .target(
            name: "PushClient",
            dependencies: [.target(name: "PushCrypto", condition: .when(platforms: [.linux, .android]))]),

        .target(name: "PushCommandLine", dependencies: ["PushStore"]),
        .target(
            name: "PushBenchmarks",
            dependencies: ["PushCommandLine", "PushCrypto", "PushDelivery", "PushModel", "PushProducer", "PushQueue", "PushRuntime", "PushStore"]),
        .executableTarget(
            name: "pushd",
            dependencies: [
                "CJemalloc", "PushBenchmarks", "PushClient", "PushCommandLine", "PushCrypto", "PushDelivery", "PushModel", "PushProducer",
                "PushQueue", "PushRuntime", "PushStore", "PushWorker",
            ]
        ),

        .target(name: "PushTestSupport", dependencies: ["PushDelivery", "PushStore"]),

        .testTarget(name: "PushCryptoTests", dependencies: ["PushCrypto"]),
        .testTarget(name: "PushClientTests", dependencies: ["PushClient", "PushCrypto", "PushModel"]),
        .testTarget(name: "PushRuntimeTests", dependencies: ["PushRuntime"]),
        .testTarget(name: "PushModelTests", dependencies: ["PushModel", "PushCrypto"]),
        .testTarget(name: "PushMetricsTests", dependencies: ["PushMetrics", "PushRuntime"]),
        .testTarget(name: "PushStoreTests", dependencies: ["PushStore", "PushModel", "PushCrypto", "PushTestSupport"]),
        .testTarget(name: "PushTLSTests", dependencies: ["COpenSSL", "PushTLS", "PushTestSupport"]),
        .testTarget(name: "PushQueueTests", dependencies: ["PushQueue", "PushRuntime", "PushTLS", "PushTestSupport"]),
        .testTarget(
            name: "PushWorkerTests",
            dependencies: ["PushClient", "PushStore", "PushQueue", "PushCrypto", "PushModel", "PushProducer", "PushTestSupport", "PushWorker"]),
        // The worker's and the cleanup's pure parts (intake, planner, retry policy, events): no servers needed.
        .testTarget(
            name: "PushWorkerUnitTests",
            dependencies: ["PushWorker", "PushCleanup", "PushCrypto", "PushDelivery", "PushModel", "PushQueue", "PushStore", "PushTestSupport"]),
        .testTarget(name: "PushDeliveryTests", dependencies: ["COpenSSL", "PushDelivery", "PushModel", "PushCrypto", "PushTLS", "PushTestSupport"]),
        .testTarget(
            name: "CBoundaryTests", dependencies: ["CPostgreSQL", "CRabbitMQ", "CRabbitMQShims", "CCurl", "CCurlShims", "COpenSSL", "COpenSSLShims"]),
        .testTarget(name: "CLITests", dependencies: ["PushCrypto", "PushTestSupport"], exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)

let cTargets: Set<String> = ["COpenSSLShims", "CCurlShims", "CRabbitMQShims"]
for target in package.targets where target.type != .system && !cTargets.contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("ExistentialAny")]
}
