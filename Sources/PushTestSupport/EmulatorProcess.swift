import Foundation
import PushDelivery

/// The shipped APNs/FCM emulator (`Deploy/emulator`), started as a real subprocess for a
/// test: its own state directory, CA and credentials, on free loopback ports.
public final class EmulatorProcess: Sendable {
    public static let teamID = "TEAMID1234"
    public static let keyID = "KEYID12345"
    public static let bundleID = "com.example.app"
    public static let projectID = "demo-project"

    public let url: String
    public let adminURL: String
    /// APNs broadcast channel management (`channels_url` of the start line).
    public let channelsURL: String
    public let caFile: String
    public let p8PEM: String
    public let serviceAccount: FCMServiceAccount
    public let stateDirectory: URL
    private let process: SpawnedProcess
    private let admin: HTTP2Client

    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts an emulator; `arguments` are extra emulator flags (e.g. `--fail-rate 0.2`).
    /// `rules` are added to the emulator configuration's `rules` section (per service, e.g.
    /// `["apns": [["prefix": "dead", "reason": "Unregistered", "timestamp": 1700000000000]]]`).
    public static func start(
        arguments: [String] = [], bundleIDs: [String] = [bundleID], rules: [String: [[String: any Sendable]]] = [:]
    ) throws -> EmulatorProcess {
        let repository = BuildProducts.repositoryRoot
        let emulatorDirectory = repository.appendingPathComponent("Deploy/emulator")
        let state = try BuildProducts.temporaryDirectory("emulator")
        let port = try FreePort.find()
        let python = try emulatorPython(emulatorDirectory)
        let credentials = state.appendingPathComponent("credentials")
        let made = try ChildProcess.run(
            python,
            [emulatorDirectory.appendingPathComponent("make_credentials.py").path, "--out", credentials.path,
             "--team-id", teamID, "--key-id", keyID, "--project", projectID, "--port", String(port)]
                + bundleIDs.flatMap { ["--bundle", $0] })
        guard made.status == 0 else { throw StartFailure(description: "make_credentials.py failed: \(made.errorText)") }
        let configPath = credentials.appendingPathComponent("emulator-config.json")
        if !rules.isEmpty {
            var config = try JSONSerialization.jsonObject(with: Data(contentsOf: configPath)) as? [String: Any] ?? [:]
            config["rules"] = rules
            try JSONSerialization.data(withJSONObject: config).write(to: configPath)
        }

        let announcement = state.appendingPathComponent("emulator.json.out")
        let log = state.appendingPathComponent("emulator.log")
        // stdout carries the one-line JSON announcement; run.sh sends everything else to stderr.
        let pid = try Spawn.start(
            "/bin/bash",
            [emulatorDirectory.appendingPathComponent("run.sh").path,
             "--port", String(port), "--admin-port", "0", "--state-dir", state.path, "--config", configPath.path] + arguments,
            output: announcement.path, errors: log.path, newProcessGroup: true)
        let process = SpawnedProcess(adopting: pid, logFile: log)
        var info: [String: Any]?
        let deadline = ContinuousClock.now + .seconds(60)
        while info == nil, process.isRunning, ContinuousClock.now < deadline {
            if let text = try? String(contentsOf: announcement, encoding: .utf8), text.hasSuffix("\n") {
                info = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            } else {
                usleep(20_000)
            }
        }
        guard let info, let url = info["url"] as? String, let adminURL = info["admin_url"] as? String, let ca = info["ca"] as? String
        else {
            process.kill9()
            throw StartFailure(description: "emulator did not announce itself: \(process.log.suffix(2000))")
        }
        let p8 = try String(contentsOf: credentials.appendingPathComponent("AuthKey_\(keyID).p8"), encoding: .utf8)
        let account = try JSONDecoder().decode(
            FCMServiceAccount.self,
            from: Data(contentsOf: credentials.appendingPathComponent("service-account-\(projectID).json")))
        return try EmulatorProcess(
            url: url, adminURL: adminURL, channelsURL: info["channels_url"] as? String ?? "", caFile: ca, p8PEM: p8,
            serviceAccount: account, state: state, process: process)
    }

    private init(
        url: String, adminURL: String, channelsURL: String, caFile: String, p8PEM: String, serviceAccount: FCMServiceAccount,
        state: URL, process: SpawnedProcess
    ) throws {
        self.url = url
        self.adminURL = adminURL
        self.channelsURL = channelsURL
        self.caFile = caFile
        self.p8PEM = p8PEM
        self.serviceAccount = serviceAccount
        self.stateDirectory = state
        self.process = process
        self.admin = try HTTP2Client(configuration: .init(engine: .libcurl, maximumInFlight: 8))
        admin.start()
    }

    /// Stops the emulator: SIGTERM, then SIGKILL if it has not exited within 10 seconds.
    /// Its state directory (CA and provider keys, log) goes too, unless
    /// `PUSHD_KEEP_TEST_STATE=1` asks to keep it: a test run outside `Deploy/test.sh`
    /// (whose private temporary directory is removed as a whole) left one behind per emulator.
    public func stop() async {
        await admin.shutdown()
        _ = await process.terminate(timeout: .seconds(10))
        if ProcessInfo.processInfo.environment["PUSHD_KEEP_TEST_STATE"] != "1" {
            try? FileManager.default.removeItem(at: stateDirectory)
        }
    }

    /// Freezes the emulator (SIGSTOP to its process group): it reads nothing more until
    /// `resume`, so what a client sends piles up in the socket buffers until they are full.
    public func pause() {
        kill(-process.pid, SIGSTOP)
    }

    /// Lets a paused emulator run (and read) again.
    public func resume() {
        kill(-process.pid, SIGCONT)
    }

    /// The APNs client configuration that trusts this emulator.
    public func apnsConfiguration(http: HTTP2Client.Configuration = .init()) -> APNsClient.Configuration {
        var http = http
        http.caFile = caFile
        return APNsClient.Configuration(teamID: Self.teamID, keyID: Self.keyID, privateKeyPEM: p8PEM, baseURLOverride: url, http: http)
    }

    public func fcmConfiguration(http: HTTP2Client.Configuration = .init()) -> FCMClient.Configuration {
        var http = http
        http.caFile = caFile
        return FCMClient.Configuration(account: serviceAccount, baseURLOverride: url, http: http)
    }

    // MARK: - Admin API

    /// Every accepted push with a sequence number above `since`, oldest first (all pages).
    public func pushes(since: Int = 0) async throws -> [[String: Any]] {
        var all: [[String: Any]] = []
        var cursor = since
        while true {
            let page = try await adminGET("/pushes?since=\(cursor)&limit=200") as? [String: Any] ?? [:]
            let pushes = page["pushes"] as? [[String: Any]] ?? []
            if pushes.isEmpty { return all }
            all += pushes
            cursor = (page["next_since"] as? Int) ?? (cursor + pushes.count)
        }
    }

    public func stats() async throws -> [String: Any] {
        (try await adminGET("/stats") as? [String: Any]) ?? [:]
    }

    public func reset() async throws {
        _ = try await admin.send(HTTPRequest(method: .post, url: adminURL + "/reset"))
    }

    private func adminGET(_ path: String) async throws -> Any {
        let response = try await admin.send(HTTPRequest(method: .get, url: adminURL + path))
        return try JSONSerialization.jsonObject(with: Data(response.body))
    }

    // MARK: - Helpers

    /// The emulator's virtualenv Python (created by its own script if missing).
    private static func emulatorPython(_ directory: URL) throws -> String {
        let result = try ChildProcess.run(
            "/bin/bash",
            ["-c", "source \"$1/venv.sh\" && ensure_venv \"$1/requirements.txt\" && echo \"$EMULATOR_VENV/bin/python\"",
             "bash", directory.path])
        let python = result.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, !python.isEmpty else {
            throw StartFailure(description: "cannot prepare the emulator's Python: \(result.errorText)")
        }
        return python
    }
}

/// A TCP port free on 127.0.0.1 right now: bound to port 0, read back, released.
public enum FreePort {
    public static func find() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Spawn.Failure(description: "socket() failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else { throw Spawn.Failure(description: "cannot find a free port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
