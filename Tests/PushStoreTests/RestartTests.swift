import Foundation
import PushModel
import PushStore
import Testing

/// PostgreSQL going away under the pool. Each test starts a server of its own (the shared one
/// is in use by other suites) and deletes it afterwards.
@Suite("Surviving PostgreSQL restarts (private server)")
struct RestartTests {
    /// Starts a private server, migrates it, runs `body`, destroys the server whatever happens.
    private func withPrivateServer(_ body: (PrivatePostgres, StoreConfiguration) async throws -> Void) async throws {
        let server = try await PrivatePostgres.start()
        do {
            var configuration = try server.configuration
            configuration.statementTimeout = .seconds(120)
            _ = try await Migrator(configuration: configuration).migrate(try TestDatabase.repositoryMigrations())
            try await body(server, configuration)
        } catch {
            await server.destroy()
            throw error
        }
        await server.destroy()
    }

    private func register(_ count: Int, prefix: String, registry: DeviceRegistry) async throws -> Set<Int64> {
        var ids: Set<Int64> = []
        for index in 0..<count {
            ids.insert(try await registry.register(DeviceRegistration(
                recipientID: "\(prefix)-\(index)", platform: .android, appID: "restart-app", environment: nil,
                token: "fcm:\(prefix)-\(index)", publicKey: TestKeys.first)).deviceID)
        }
        return ids
    }

    @Test("a statement in flight during `pg_ctl restart -m fast` fails with a retryable connectionLost; the next succeeds on a fresh connection and nothing committed is lost")
    func restartInFlight() async throws {
        try await withPrivateServer { server, configuration in
            var configuration = configuration
            configuration.poolSize = 2
            let pool = ConnectionPool(configuration: configuration)
            let registry = DeviceRegistry(pool: pool)
            let app = AppIdentifiers(fcmProjectID: "restart-app")
            let before = try await register(20, prefix: "before", registry: registry)

            let sleeper = Task { try await pool.query("SELECT pg_sleep(\(60.0))") }
            try await waitUntil("the statement runs on the server") {
                try await pool.query("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep%'")
                    .singleRow().decode(Int.self, column: 0) == 1
            }
            let opened = pool.statistics.connectionsOpened
            try await server.restart()

            let result = await sleeper.result
            guard case .failure(let error as StoreError) = result, case .connectionLost(let loss) = error else {
                Issue.record("the in-flight statement should fail with connectionLost, got \(result)")
                await pool.shutdown()
                return
            }
            #expect(error.isRetryable)
            #expect(loss.mayHaveExecuted)

            let recipients = (0..<20).map { "before-\($0)" }
            let survivors = try await registry.devices(forRecipients: recipients, in: app)
            #expect(Set(survivors.map(\.id)) == before, "every committed registration is still there")
            #expect(pool.statistics.connectionsOpened > opened, "served by a new connection")
            let after = try await register(5, prefix: "after", registry: registry)
            #expect(after.isDisjoint(with: before))
            #expect(try await registry.devices(forRecipients: recipients + (0..<5).map { "after-\($0)" }, in: app).count == 25)
            await pool.shutdown()
        }
    }

    @Test("connections idle across a restart are replaced without the caller seeing an error")
    func restartWhileIdle() async throws {
        try await withPrivateServer { server, configuration in
            var configuration = configuration
            configuration.poolSize = 3
            configuration.poolGrowthDelay = .zero  // three overlapping statements, three connections
            let pool = ConnectionPool(configuration: configuration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 { group.addTask { _ = try await pool.query("SELECT pg_sleep(\(0.05))") } }
                try await group.waitForAll()
            }
            #expect(pool.statistics.idle == 3)
            try await server.restart()
            for _ in 0..<3 {
                #expect(try await pool.query("SELECT 1").singleRow().decode(Int32.self, column: 0) == 1)
            }
            #expect(pool.statistics.brokenConnectionsDiscarded == 3)
            #expect(pool.statistics.connectionsOpened == 4)
            await pool.shutdown()
        }
    }

    @Test("a caller that waits out the growth delay while the first connection cannot be opened gets the second once the server is back")
    func overdueWhileServerDown() async throws {
        try await withPrivateServer { server, configuration in
            var growing = configuration
            growing.poolSize = 2
            growing.poolGrowthDelay = .milliseconds(50)
            growing.acquireTimeout = .seconds(30)
            let pool = ConnectionPool(configuration: growing)
            try await server.stop()
            // The holder queues first (its lease starts the attempts, which keep failing), so
            // the first connection is its own; it keeps it until the second caller is answered,
            // which only a second connection, opened for that overdue caller, can do.
            let (answered, announce) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await pool.withConnection { _ in for await _ in answered {} }
            }
            try await waitUntil("the holder's attempts are failing") { pool.statistics.failedConnectionAttempts >= 1 }
            let second = Task { try await pool.query("SELECT 2").singleRow().decode(Int32.self, column: 0) }
            // Several more refusals: the second caller has long waited its 50 ms by then.
            try await waitUntil("the attempts keep failing") { pool.statistics.failedConnectionAttempts >= 4 }
            #expect(pool.statistics.connecting == 1, "one at a time while the server is down")
            try await server.startAgain()
            #expect(try await second.value == 2)
            announce.finish()
            try await holder.value
            #expect(pool.statistics.connectionsOpened == 2)
            await pool.shutdown()
        }
    }

    @Test("while the server is down calls fail with a retryable error; a caller waiting when it comes back is served (reconnect with backoff)")
    func serverDownThenUp() async throws {
        try await withPrivateServer { server, configuration in
            var short = configuration
            // Long enough for a refused connection attempt to be recorded even on a loaded machine.
            short.acquireTimeout = .seconds(3)
            var patient = configuration
            patient.acquireTimeout = .seconds(60)
            let impatient = ConnectionPool(configuration: short)
            let waiting = ConnectionPool(configuration: patient)
            _ = try await impatient.query("SELECT 1")
            try await server.stop()

            let error = await #expect(throws: StoreError.self) { try await impatient.query("SELECT 1") }
            #expect(error?.isRetryable == true)
            guard case .poolTimeout(_, let lastConnectError)? = error else {
                Issue.record("expected poolTimeout naming the connection failure, got \(String(describing: error))")
                await impatient.shutdown()
                await waiting.shutdown()
                return
            }
            #expect(lastConnectError != nil)

            let served = Task { try await waiting.query("SELECT 42").singleRow().decode(Int32.self, column: 0) }
            try await waitUntil("the waiting pool has failed to connect twice and keeps trying") {
                waiting.statistics.failedConnectionAttempts >= 2 && waiting.statistics.connecting == 1
            }
            #expect(waiting.statistics.connectionsOpened == 0)
            try await server.startAgain()
            #expect(try await served.value == 42)
            // The impatient pool may still be sleeping out a backoff; retrying gets past it.
            let seven = try await impatient.retrying(attempts: 20) { () throws(StoreError) in
                try await impatient.query("SELECT 7").singleRow().decode(Int32.self, column: 0)
            }
            #expect(seven == 7)
            await impatient.shutdown()
            await waiting.shutdown()
        }
    }
}
