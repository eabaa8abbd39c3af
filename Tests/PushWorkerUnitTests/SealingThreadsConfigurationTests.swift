import PushWorker
import Testing

@Suite("Configuration: which threads seal (no servers)")
struct SealingThreadsConfigurationTests {
    static func load(_ extra: [String: String]) throws -> WorkerConfiguration {
        try WorkerConfiguration.load(
            file: nil, environment: KeyCacheSizeConfigurationTests.base.merging(extra) { $1 }, needsDelivery: false)
    }

    @Test("auto unless set; PUSHD_SEALING_THREADS takes auto, pool or loops; anything else is a configuration problem")
    func parsing() throws {
        #expect(try Self.load([:]).sealingThreads == .auto)
        #expect(try Self.load(["PUSHD_SEALING_THREADS": "pool"]).sealingThreads == .pool)
        #expect(try Self.load(["PUSHD_SEALING_THREADS": "loops"]).sealingThreads == .loops)
        #expect { _ = try Self.load(["PUSHD_SEALING_THREADS": "threads"]) } throws: { error in
            "\(error)".contains("sealing_threads")
        }
    }

    @Test("auto seals on the loops only when there are no more cores than loop threads, and never without a loop")
    func policy() {
        #expect(SealingThreads.auto.sealsOnLoops(loopThreads: 2, cores: 2))
        #expect(SealingThreads.auto.sealsOnLoops(loopThreads: 3, cores: 2))
        #expect(!SealingThreads.auto.sealsOnLoops(loopThreads: 2, cores: 8))
        #expect(!SealingThreads.auto.sealsOnLoops(loopThreads: 0, cores: 1))
        #expect(SealingThreads.loops.sealsOnLoops(loopThreads: 1, cores: 64))
        #expect(!SealingThreads.loops.sealsOnLoops(loopThreads: 0, cores: 1))
        #expect(!SealingThreads.pool.sealsOnLoops(loopThreads: 2, cores: 1))
    }
}
