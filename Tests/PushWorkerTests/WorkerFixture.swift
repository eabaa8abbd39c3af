import Foundation
import PushCrypto
import PushModel
import PushQueue
import PushStore
import PushTestSupport
import Testing

/// Everything one end-to-end test needs, all of it its own: the emulator, a topology under
/// a unique prefix (short retry tiers), a freshly migrated scratch database, device keys,
/// and the environment that points `pushd worker`/`pushd cleanup` at all of it.
///
/// Tests use it through `WorkerFixture.run`, which removes everything (workers killed,
/// topology deleted, database dropped, emulator stopped) whether the test passes, fails or
/// throws, so no state outlives a test and no test depends on another's.
final class WorkerFixture: @unchecked Sendable {
    // `@unchecked Sendable`: all stored properties are set in init and never mutated (the
    // process list is behind its own lock); the tests use the fixture from one task at a time.

    /// A device the test registered, with what the emulator should see for it.
    struct TestDevice: Sendable {
        enum Kind: String, Sendable {
            case normal, legacy, flaky, pruned, keptAfterRegistration
        }

        let id: Int64
        let recipient: String
        let platform: Platform
        let token: String
        let kind: Kind
        /// Index into `keys`; nil for a legacy device.
        let keyIndex: Int?
    }

    static let oldInvalidationMilliseconds = 1_700_000_000_000

    let emulator: EmulatorProcess
    let prefix: String
    let bundleID: String
    let topology: Topology
    let database: ScratchDatabase
    let pool: ConnectionPool
    let registry: DeviceRegistry
    let amqp: AMQPConnection
    let keys: [DevicePrivateKey]
    let publicKeys: [String]
    let directory: URL
    let maxAttempts: Int
    /// Every `pushd` process the test started, killed at tear-down if still running.
    private let processes = NSLockedValue<[PushdProcess]>([])
    /// Queues a test declared beside the topology (`subscribe`), deleted at tear-down.
    private let extraQueues = NSLockedValue<[String]>([])

    /// Sets up a fixture, runs `body` with it, and tears it down on every path.
    /// - Parameter apnsRules: emulator rules added to the fixture's own (`dead` → a dated
    ///   `Unregistered`), e.g. `["prefix": "e4e0", "reason": "ExpiredProviderToken", "fail_times": 2]`.
    static func run(
        maxAttempts: Int = 4, emulatorArguments: [String] = [], apnsRules: [[String: any Sendable]] = [],
        _ body: (WorkerFixture) async throws -> Void
    ) async throws {
        let fixture = try await WorkerFixture(maxAttempts: maxAttempts, emulatorArguments: emulatorArguments, apnsRules: apnsRules)
        do {
            try await body(fixture)
        } catch {
            await fixture.tearDown()
            throw error
        }
        await fixture.tearDown()
    }

    /// Whatever this creates before a later step throws is removed before the error leaves:
    /// the scratch database is dropped, the topology deleted, the emulator killed (by its
    /// process's deinit).
    private init(maxAttempts: Int, emulatorArguments: [String], apnsRules: [[String: any Sendable]]) async throws {
        prefix = TestServers.uniqueName("w")
        bundleID = "com.test.\(prefix.replacingOccurrences(of: "-", with: ""))"
        self.maxAttempts = maxAttempts
        emulator = try EmulatorProcess.start(
            arguments: emulatorArguments, bundleIDs: [bundleID],
            rules: ["apns": [["prefix": "dead", "reason": "Unregistered", "timestamp": Self.oldInvalidationMilliseconds]] + apnsRules])
        topology = Topology(prefix: prefix, retryTiers: [
            .init(name: "1s", delay: .seconds(1)), .init(name: "2s", delay: .seconds(2)), .init(name: "3s", delay: .seconds(3)),
        ])
        database = try await ScratchDatabase.create(migrated: true)
        pool = ConnectionPool(configuration: database.configuration)
        registry = DeviceRegistry(pool: pool)
        do {
            var amqpConfiguration = try AMQPConfiguration(url: try TestServers.amqpURL())
            amqpConfiguration.connectionName = "test-\(prefix)"
            amqp = try AMQPConnection(configuration: amqpConfiguration, topology: topology)
        } catch {
            await pool.shutdown()
            await database.drop()
            throw error
        }
        do {
            await amqp.start()
            try await amqp.waitUntilConnected(timeout: .seconds(20))
            // A handful of device keys shared round-robin: RSA generation is the slow part.
            keys = try (0..<8).map { _ in try DevicePrivateKey.generate() }
            publicKeys = try keys.enumerated().map { index, key in
                index.isMultiple(of: 2) ? try key.publicKey.pkcs1Base64 : try key.publicKey.subjectPublicKeyInfoBase64
            }
            directory = try BuildProducts.temporaryDirectory("worker-\(prefix)")
        } catch {
            try? await amqp.delete(topology)
            await amqp.close()
            await pool.shutdown()
            await database.drop()
            throw error
        }
    }

    /// Environment for `pushd worker` / `pushd cleanup`.
    var environment: [String: String] {
        let credentials = emulator.stateDirectory.appendingPathComponent("credentials")
        return database.childEnvironment.merging([
            "PUSHD_TOPOLOGY_PREFIX": prefix,
            "PUSHD_RETRY_TIERS": topology.retryTiers.map(\.name).joined(separator: ","),
            "PUSHD_MAX_ATTEMPTS": String(maxAttempts),
            "PUSHD_METRICS_PORT": "0",
            "PUSHD_PREFETCH": "4",
            "PUSHD_CA_FILE": emulator.caFile,
            "PUSHD_APNS_TEAM_ID": EmulatorProcess.teamID,
            "PUSHD_APNS_KEY_ID": EmulatorProcess.keyID,
            "PUSHD_APNS_KEY_FILE": credentials.appendingPathComponent("AuthKey_\(EmulatorProcess.keyID).p8").path,
            "PUSHD_APNS_BUNDLE_IDS": bundleID,
            "PUSHD_APNS_BASE_URL": emulator.url,
            "PUSHD_FCM_SERVICE_ACCOUNT_FILES": credentials.appendingPathComponent("service-account-\(EmulatorProcess.projectID).json").path,
            "PUSHD_FCM_BASE_URL": emulator.url,
            "PUSHD_SHUTDOWN_TIMEOUT_SECONDS": "20",
        ]) { $1 }
    }

    /// A `pushd worker` with the fixture's environment plus `extra` (which wins).
    func startWorker(_ label: String = "worker", environment extra: [String: String] = [:]) throws -> PushdProcess {
        try start(["worker"], logName: label, extra: extra)
    }

    func startCleanup() throws -> PushdProcess {
        try start(["cleanup"], logName: "cleanup")
    }

    private func start(_ arguments: [String], logName: String, extra: [String: String] = [:]) throws -> PushdProcess {
        let process = try PushdProcess(
            arguments, environment: environment.merging(extra) { $1 }, logFile: directory.appendingPathComponent("\(logName).log"))
        processes.update { $0.append(process) }
        return process
    }

    /// Kills what still runs, then removes the topology, the database, the emulator and the
    /// fixture's directory (worker logs; kept with `PUSHD_KEEP_TEST_STATE=1`). A
    /// test that restarted the broker leaves the connection reconnecting: wait for it, or the
    /// topology would outlive the test.
    private func tearDown() async {
        for process in processes.get() where process.isRunning { process.kill9() }
        try? await amqp.waitUntilConnected(timeout: .seconds(30))
        _ = await waitUntilEveryQueueHasALeader()
        _ = try? await amqp.delete(topology)
        for queue in extraQueues.get() { _ = try? await amqp.deleteQueue(queue) }
        await amqp.close()
        await pool.shutdown()
        await database.drop()
        await emulator.stop()
        if ProcessInfo.processInfo.environment["PUSHD_KEEP_TEST_STATE"] != "1" {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// After a broker restart the quorum queues elect their leaders again, one by one, and
    /// each starts its dead-letter worker on election. Deleting a queue still electing kills
    /// that worker twice, and RabbitMQ 3.10 then gives up its dead-letter supervisor
    /// (rabbit_fifo_dlx_sup, "reached_max_restart_intensity") until the node restarts: every
    /// at-least-once queue declared afterwards (the next test's) crashes on election and its
    /// publishes are nacked. A purge goes through a queue's leader, so once every queue has
    /// answered one, every queue has a leader. Missing queues (a test deleted them) count as done.
    private func waitUntilEveryQueueHasALeader() async -> Bool {
        await waitUntil(timeout: .seconds(30), every: .milliseconds(100)) {
            for queue in topology.queues {
                do throws(QueueError) {
                    try await amqp.purge(queue: queue.name)
                } catch .channelClosedByBroker(404, _) {
                    continue
                } catch {
                    return false
                }
            }
            return true
        }
    }

    /// A queue of the test's own bound to the events exchange with `routingKey`, removed at
    /// tear-down.
    func subscribe(toEvents routingKey: String) async throws -> String {
        let queue = "\(prefix).test.\(routingKey)"
        extraQueues.update { $0.append(queue) }
        try await amqp.declareSubscription(queue: queue, exchange: topology.eventsExchange, routingKey: routingKey)
        return queue
    }

    // MARK: - Devices

    /// Registers `count` recipients with two iOS and two Android devices each. `mix` picks
    /// a kind per device (by its index); invalid and flaky tokens carry the emulator's rule
    /// prefixes.
    /// Recipients are numbered from `first` (`<prefix>-r<n>`), so later calls can add others.
    func registerRecipients(_ count: Int, first: Int = 0, mix: (Int, Platform) -> TestDevice.Kind) async throws -> [TestDevice] {
        var devices: [TestDevice] = []
        var index = first * 4
        for recipientNumber in first..<(first + count) {
            let recipient = "\(prefix)-r\(recipientNumber)"
            for platform in [Platform.ios, .ios, .android, .android] {
                let kind = mix(index, platform)
                let token = Self.token(platform: platform, kind: kind, index: index)
                let keyIndex = kind == .legacy ? nil : index % keys.count
                let registration = DeviceRegistration(
                    recipientID: recipient, platform: platform,
                    appID: platform == .ios ? bundleID : EmulatorProcess.projectID,
                    environment: platform == .ios ? .production : nil, token: token,
                    publicKey: keyIndex.map { publicKeys[$0] })
                let outcome = try await registry.register(registration)
                devices.append(TestDevice(
                    id: outcome.deviceID, recipient: recipient, platform: platform, token: token, kind: kind, keyIndex: keyIndex))
                index += 1
            }
        }
        return devices
    }

    static func token(platform: Platform, kind: TestDevice.Kind, index: Int) -> String {
        let unique = String(format: "%08x", index) + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        switch platform {
        case .ios:
            let prefix: String
            switch kind {
            case .pruned: prefix = index.isMultiple(of: 2) ? "410a" : "400b"
            case .keptAfterRegistration: prefix = "dead"
            case .flaky: prefix = "fa11"
            case .normal, .legacy: prefix = "c0de"
            }
            return String((prefix + unique + String(repeating: "0", count: 64)).prefix(64))
        case .android:
            switch kind {
            case .pruned: return (index.isMultiple(of: 2) ? "unregistered-" : "mismatch-") + unique
            case .keptAfterRegistration: return "invalid-" + unique  // not used: only APNs dates its 410s
            case .flaky: return "flaky-" + unique
            case .normal, .legacy: return "fcm-" + unique
            }
        }
    }

    // MARK: - Jobs

    func job(id: String, recipients: [String], title: String) -> [String: Any] {
        [
            "version": 1, "job_id": id,
            "app": ["ios_bundle_id": bundleID, "fcm_project_id": EmulatorProcess.projectID, "experience_id": "@acme/app", "scope_key": "@acme/app"],
            "recipients": ["recipient_ids": recipients],
            "content": [
                "title": title, "message": "private message for \(id)", "data": ["job": id],
                "sender": ["id": "s-1", "displayName": "Acme Recruiting", "avatarUrl": "https://example.com/a.png"],
            ],
            "fallback": ["title": "New message", "message": "Open the app to read it"],
        ]
    }

    /// Publishes raw bytes to the jobs exchange, as any producer could (no validation).
    func publishRaw(_ body: [UInt8], messageID: String? = nil) async throws {
        try await amqp.publish(PublishRequest(
            exchange: topology.jobsExchange, routingKey: Topology.jobRoutingKey,
            message: OutgoingMessage(body: body, contentType: "application/json", messageID: messageID)))
    }

    func publish(_ job: [String: Any]) async throws -> NotificationJob {
        let data = try JSONSerialization.data(withJSONObject: job)
        try await publishRaw([UInt8](data), messageID: job["job_id"] as? String)
        return try NotificationJob(json: data)
    }

    // MARK: - What the emulator saw

    struct Received {
        let token: String
        /// `apns-collapse-id` (iOS) or the notification tag (Android).
        let collapseID: String?
        /// FCM's `android.collapse_key`.
        let collapseKey: String?
        let body: [String: Any]
        /// The `apns-*` headers of an APNs push.
        var headers: [String: Any] = [:]
        /// The APNs environment the emulator received it in ("production", "sandbox").
        var environment: String?
        /// When the emulator's serving process had read it, in seconds since 1970: the
        /// order of arrival, which the log's order is not quite (each of the emulator's
        /// processes hands its records to the parent on its own).
        var receivedAt: Double?
    }

    func received() async throws -> [Received] {
        try await emulator.pushes().compactMap { try Self.received(from: $0) }
    }

    /// One record of the emulator's push log, if it is a push with a JSON body.
    static func received(from record: [String: Any]) throws -> Received? {
        guard let token = record["token"] as? String, let text = record["body"] as? String,
              let body = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        else { return nil }
        let headers = record["headers"] as? [String: Any]
        let message = body["message"] as? [String: Any]
        let android = message?["android"] as? [String: Any]
        let data = message?["data"] as? [String: Any]
        // iOS: apns-collapse-id; Android: expo-notifications' `tag` (the collapse key only
        // when the job asked for one).
        let collapse = headers?["apns-collapse-id"] as? String ?? data?["tag"] as? String
        return Received(
            token: token, collapseID: collapse, collapseKey: android?["collapse_key"] as? String, body: body,
            headers: headers ?? [:], environment: record["environment"] as? String,
            receivedAt: (record["received_at"] as? NSNumber)?.doubleValue)
    }

    /// The sealed envelope and the clear text of an APNs or FCM body.
    static func parts(of body: [String: Any]) -> (envelope: String?, title: String?, message: String?) {
        if let aps = body["aps"] as? [String: Any] {
            let alert = aps["alert"] as? [String: Any]
            return (body["encrypted_data"] as? String, alert?["title"] as? String, alert?["body"] as? String)
        }
        let data = (body["message"] as? [String: Any])?["data"] as? [String: String]
        return (data?["encrypted_data"], data?["title"], data?["message"])
    }

    func deadLetters(count: Int, timeout: Duration) async throws -> [QueueMessage] {
        try await collect(from: topology.deadQueue, count: count, timeout: timeout)
    }

    /// Consumes and acks messages of `queue` until `count` arrived or `timeout` passed.
    func collect(from queue: String, count: Int, timeout: Duration) async throws -> [QueueMessage] {
        let consumer = try await amqp.consume(queue: queue, prefetch: 100)
        let collector = Task {
            var collected: [QueueMessage] = []
            for try await message in consumer {
                collected.append(message)
                _ = await message.ack()
                if collected.count >= count { break }
            }
            return collected
        }
        let timer = Task {
            try await Task.sleep(for: timeout)
            await consumer.cancel()
        }
        let messages = (try? await collector.value) ?? []
        timer.cancel()
        await consumer.cancel()
        return messages
    }
}
