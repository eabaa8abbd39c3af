import Foundation
import PushTestSupport
import Testing

/// Tests own their state: a test that fails or throws must leave nothing behind that a
/// later test, a later run or `Deploy/cluster.sh` could trip on.
@Suite("Worker fixture cleans up after a failing test", .serialized)
struct FixtureCleanupTests {
    struct DeliberateFailure: Error {}

    struct Left: Sendable {
        let database: String
        let prefix: String
        let worker: PushdProcess
        /// The fixture's directory (worker logs) and the emulator's (its CA and keys).
        let directories: [URL]
    }

    @Test("a test that throws mid-run leaves no worker, queue, scratch database or directory behind")
    func throwingTestLeavesNothing() async throws {
        let left = NSLockedValue<Left?>(nil)
        await #expect(throws: DeliberateFailure.self) {
            try await WorkerFixture.run { fixture in
                let worker = try fixture.startWorker()
                left.set(Left(
                    database: fixture.database.name, prefix: fixture.prefix, worker: worker,
                    directories: [fixture.directory, fixture.emulator.stateDirectory]))
                #expect(left.get()?.directories.allSatisfy { FileManager.default.fileExists(atPath: $0.path) } == true)
                let hadQueues = try TestServers.queueNames().contains { $0.hasPrefix(fixture.prefix + ".") }
                let hadDatabase = try await ScratchDatabase.exists(fixture.database.name)
                #expect(hadQueues && hadDatabase, "the fixture made its own queues and database")
                throw DeliberateFailure()
            }
        }
        let state = try #require(left.get())
        #expect(!state.worker.isRunning, "the worker was stopped")
        #expect(try await ScratchDatabase.exists(state.database) == false, "the scratch database was dropped")
        let queues = try TestServers.queueNames().filter { $0.hasPrefix(state.prefix + ".") }
        #expect(queues.isEmpty, "queues left behind: \(queues)")
        if ProcessInfo.processInfo.environment["PUSHD_KEEP_TEST_STATE"] != "1" {
            let kept = state.directories.filter { FileManager.default.fileExists(atPath: $0.path) }
            #expect(kept.isEmpty, "directories left behind: \(kept.map(\.path))")
        }
    }
}
