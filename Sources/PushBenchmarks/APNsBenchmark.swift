import Foundation
import PushCommandLine
import PushCrypto
import PushDelivery
import PushRuntime
import Synchronization

/// `pushd bench apns`: our HTTP/2 client against the emulator, beside the emulator's own
/// ceiling measured by h2load in the same run; and the CPU per request of each of h2load,
/// our HTTP/2 engine alone (h2load's request, a task per push) and the whole `APNsClient`
/// (submitted as the worker sends, and awaited from a task per push), which splits a push's
/// client cost into the engine, the task and the APNs layer.
enum APNsBenchmark {
    static func run(_ arguments: [String]) async throws(CLIError) {
        let parsed = try ParsedArguments(
            arguments, options: ["url", "ca-file", "p8", "team-id", "key-id", "bundle", "requests", "concurrency", "connections", "payload-bytes"])
        let url = try parsed.required("url")
        let caFile = try parsed.required("ca-file")
        let p8 = try readTextFile(try parsed.required("p8"), what: ".p8 key")
        let teamID = parsed["team-id"] ?? "TEAMID1234"
        let keyID = parsed["key-id"] ?? "KEYID12345"
        let bundle = parsed["bundle"] ?? "com.example.app"
        let requests = try parsed.integer("requests", default: 50_000)
        let concurrency = try parsed.integer("concurrency", default: 400)
        let connections = try parsed.integer("connections", default: 4)
        // --payload-bytes pads `encrypted_data` to about that size (a worker's APNs payload with
        // a 1 KB plaintext is about 2,000 bytes); the default is a small payload.
        let padding = max(0, try parsed.integer("payload-bytes", default: 0) - 150)
        let payload = Array((#"{"aps":{"alert":{"title":"New message","body":"Open the app to read it"},"mutable-content":1},"encrypted_data":"{\"encrypted_key\":\"x"#
            + String(repeating: "A", count: padding) + #"\"}"}"#).utf8)
        let token = String(repeating: "ab", count: 32)

        // The ceiling: h2load with the same headers, token and payload.
        let tokens: APNsTokenProvider
        do { tokens = try APNsTokenProvider(teamID: teamID, keyID: keyID, privateKeyPEM: p8) } catch { throw .failure("\(error)") }
        let jwt: String
        do { jwt = try tokens.token() } catch { throw .failure("\(error)") }
        let deviceURL = "\(url)/3/device/\(token)"
        let (ceiling, h2loadCPU) = try h2loadRate(
            url: deviceURL, jwt: jwt, bundle: bundle, payload: payload, requests: requests, connections: connections)

        // Our HTTP/2 engine alone, with h2load's request (same headers and path), awaited from
        // a task per push: what the engine and a task cost, without the APNs layer (URL,
        // header strings, first-success gate, classifying).
        let engine = try await engineAlone(
            url: deviceURL, jwt: jwt, bundle: bundle, payload: payload, caFile: caFile,
            requests: requests, concurrency: concurrency, connections: connections)

        // Our client, the way the worker uses it.
        let client: APNsClient
        do {
            client = try APNsClient(configuration: .init(
                teamID: teamID, keyID: keyID, privateKeyPEM: p8, baseURLOverride: url,
                http: .init(maximumInFlight: concurrency, maximumConnectionsPerHost: connections, caFile: caFile)))
        } catch { throw .failure("\(error)") }
        client.start()
        let notification = APNsNotification(deviceToken: token, bundleID: bundle, environment: .production, payload: payload)
        _ = await client.send(notification)  // warm up: connection, TLS, first authenticated stream
        // This process's CPU over the timed part: the client's cost per push (HTTP/2, TLS, the
        // APNs layer), the part of a worker's CPU per delivery that is neither the envelope
        // nor the job's own work. Submitted, as the worker's batches send (no task per push);
        // then awaited from a task per push, as `send`'s other callers do.
        let group = RequestGroup()
        let measured = await driveSubmitted(requests: requests, concurrency: concurrency) { done in
            await client.submit(notification, group: group) { done($0.outcome.label == "delivered") }
        }
        let awaited = await drive(requests: requests, concurrency: concurrency) {
            await client.send(notification).label == "delivered"
        }
        await client.shutdown()
        let (latencies, failures, elapsed) = (measured.latencies, measured.failures, measured.seconds)
        let sorted = latencies.sorted()
        let rate = Double(requests) / elapsed
        StandardStreams.write(line: "bench apns: \(requests) pushes, \(concurrency) in flight over \(connections) HTTP/2 connections, \(url)")
        StandardStreams.write(line: String(format: "  emulator ceiling (h2load, same requests)  : %10.0f req/s", ceiling))
        StandardStreams.write(line: String(format: "  pushd APNsClient                          : %10.0f pushes/s  (%d not delivered)", rate, failures))
        StandardStreams.write(line: String(format: "  latency p50 / p99                         : %8.1f / %.1f ms", percentile(sorted, 0.50) * 1000, percentile(sorted, 0.99) * 1000))
        StandardStreams.write(line: String(format: "  ratio pushd / ceiling                     : %10.3f", rate / ceiling))
        StandardStreams.write(line: String(
            format: "  CPU per push (this process, %d-byte payload): %8.1f µs", payload.count, measured.cpuMicrosecondsPerRequest))
        StandardStreams.write(line: String(
            format: "  CPU per request: h2load %.1f µs, pushd HTTP2Client alone %.1f µs (%.0f req/s, %d failed), APNsClient %.1f µs",
            h2loadCPU, engine.cpuMicrosecondsPerRequest, Double(requests) / engine.seconds, engine.failures,
            measured.cpuMicrosecondsPerRequest))
        StandardStreams.write(line: String(
            format: "  APNsClient awaited from a task per push: %.0f pushes/s (%d not delivered), CPU %.1f µs per push",
            Double(requests) / awaited.seconds, awaited.failures, awaited.cpuMicrosecondsPerRequest))
    }

    /// What one timed run measured.
    struct Measured {
        var latencies: [Double]
        var failures: Int
        var seconds: Double
        /// This process's user + system CPU over the run, per request.
        var cpuMicrosecondsPerRequest: Double
    }

    /// Times `run`, which makes `requests` requests and returns their latencies and failures,
    /// with this process's CPU over it.
    static func measure(requests: Int, _ run: () async -> (latencies: [Double], failures: Int)) async -> Measured {
        let cpuBefore = WorkerUsage.read(pid: getpid())?.cpuSeconds ?? 0
        let started = ContinuousClock.now
        let (latencies, failures) = await run()
        let elapsed = seconds(ContinuousClock.now - started)
        let cpuAfter = WorkerUsage.read(pid: getpid())?.cpuSeconds ?? cpuBefore
        return Measured(
            latencies: latencies, failures: failures, seconds: elapsed,
            cpuMicrosecondsPerRequest: (cpuAfter - cpuBefore) * 1e6 / Double(max(1, requests)))
    }

    /// Runs `send` `requests` times, `concurrency` at once, a task per request (as `send`'s
    /// callers other than the worker's batches do); true from `send` means delivered.
    static func drive(requests: Int, concurrency: Int, _ send: @escaping @Sendable () async -> Bool) async -> Measured {
        await measure(requests: requests) {
            await withTaskGroup(of: (Double, Bool).self) { group in
                var latencies: [Double] = []
                var failures = 0
                latencies.reserveCapacity(requests)
                var launched = 0
                func launch() {
                    launched += 1
                    group.addTask {
                        let begin = ContinuousClock.now
                        let delivered = await send()
                        return (seconds(ContinuousClock.now - begin), delivered)
                    }
                }
                while launched < min(concurrency, requests) { launch() }
                for await (latency, delivered) in group {
                    latencies.append(latency)
                    if !delivered { failures += 1 }
                    if launched < requests { launch() }
                }
                return (latencies, failures)
            }
        }
    }

    /// Submits `requests` pushes, `concurrency` in flight at once, from one task, without a
    /// task per push (as the worker's batches send); `submit` calls its argument once, with
    /// true for delivered.
    static func driveSubmitted(
        requests: Int, concurrency: Int, _ submit: (@escaping @Sendable (Bool) -> Void) async -> Void
    ) async -> Measured {
        let slots = AsyncSemaphore(permits: max(1, concurrency))
        let results = Mutex<(latencies: [Double], failures: Int)>(([], 0))
        results.withLock { $0.latencies.reserveCapacity(requests) }
        return await measure(requests: requests) {
            for _ in 0..<requests {
                try? await slots.acquire()
                let begin = ContinuousClock.now
                await submit { delivered in
                    let latency = seconds(ContinuousClock.now - begin)
                    results.withLock {
                        $0.latencies.append(latency)
                        if !delivered { $0.failures += 1 }
                    }
                    slots.release()
                }
            }
            // Every slot back: every push answered.
            for _ in 0..<max(1, concurrency) { try? await slots.acquire() }
            return results.withLock { ($0.latencies, $0.failures) }
        }
    }

    /// `HTTP2Client` on its own, sending h2load's request: one request alone first (APNs
    /// allows one stream on a new connection until a request succeeds), then the timed run.
    static func engineAlone(
        url: String, jwt: String, bundle: String, payload: [UInt8], caFile: String, requests: Int, concurrency: Int, connections: Int
    ) async throws(CLIError) -> Measured {
        let http: HTTP2Client
        do {
            http = try HTTP2Client(configuration: .init(
                maximumInFlight: concurrency, maximumConnectionsPerHost: connections, caFile: caFile, threadName: "pushd-h2-bench"))
        } catch { throw .failure("\(error)") }
        http.start()
        let request = HTTPRequest(
            url: url,
            headers: [("authorization", "bearer \(jwt)"), ("apns-topic", bundle), ("apns-push-type", "alert"), ("apns-priority", "10")],
            body: payload, responseHeaderNames: ["apns-id"])
        let first = try? await http.send(request)
        guard first?.status == 200 else {
            await http.shutdown()
            throw .failure("the engine's first request was not accepted: \(first.map { "HTTP \($0.status)" } ?? "no response")")
        }
        let measured = await drive(requests: requests, concurrency: concurrency) { (try? await http.send(request))?.status == 200 }
        await http.shutdown()
        return measured
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    /// Runs h2load (Debian `nghttp2-client`); returns its requests per second and its own CPU
    /// per request.
    static func h2loadRate(
        url: String, jwt: String, bundle: String, payload: [UInt8], requests: Int, connections: Int
    ) throws(CLIError) -> (rate: Double, cpuMicrosecondsPerRequest: Double) {
        let payloadFile = FileManager.default.temporaryDirectory.appendingPathComponent("pushd-bench-\(UUID().uuidString).json")
        do { try Data(payload).write(to: payloadFile) } catch { throw .failure("cannot write \(payloadFile.path)") }
        defer { try? FileManager.default.removeItem(at: payloadFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "h2load", "-n", String(requests), "-c", String(connections), "-m", "100", "-d", payloadFile.path,
            "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: \(bundle)", "-H", "apns-push-type: alert",
            "-H", "apns-priority: 10", url,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        // h2load's own CPU: the children's usage grows by it once it has been waited for (the
        // only child this process waits for meanwhile).
        let childrenBefore = childrenCPUSeconds()
        do { try process.run() } catch { throw .failure("h2load is not installed (apt-get install nghttp2-client)") }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let h2loadCPU = (childrenCPUSeconds() - childrenBefore) * 1e6 / Double(max(1, requests))
        // "finished in 3.31s, 15098.22 req/s, …"
        guard let range = text.range(of: #"finished in [0-9.]+m?s, ([0-9.]+) req/s"#, options: .regularExpression) else {
            throw .failure("could not read h2load's output:\n\(text.suffix(800))")
        }
        let match = String(text[range])
        let number = match.split(separator: ",")[1].trimmingCharacters(in: .whitespaces).split(separator: " ")[0]
        guard let rate = Double(number) else { throw .failure("could not read h2load's rate from \(match)") }
        if !(text.contains(" 0 failed") && text.contains(" 0 errored")) { FileHandle.standardError.write(Data("h2load reported errors:\n\(text.suffix(600))\n".utf8)) }
        return (rate, h2loadCPU)
    }

    /// User + system CPU of this process's waited-for children, in seconds.
    static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_CHILDREN.rawValue, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
