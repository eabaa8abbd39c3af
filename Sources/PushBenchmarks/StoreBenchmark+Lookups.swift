import PushModel
import PushStore

extension StoreBenchmark {
    struct LookupFigures {
        let devicesPerSecond: Double
        let lookupsPerSecond: Double
        /// Milliseconds.
        let p50: Double
        let p99: Double
    }

    /// `options.concurrency` tasks look up random batches of `batch` distinct recipients
    /// for `options.seconds`. Every answer is checked: two devices per recipient.
    static func lookups(
        registry: DeviceRegistry, app: AppIdentifiers, recipients: [String], batch: Int, options: Options
    ) async throws(StoreError) -> LookupFigures {
        let shuffled = recipients.shuffled()
        // Warm-up: plans, caches, connections.
        _ = try await registry.devices(forRecipients: Array(shuffled.prefix(batch)), in: app)
        let clock = ContinuousClock()
        let started = clock.now
        let deadline = started + .milliseconds(Int64(options.seconds * 1000))
        let results = await withTaskGroup(of: Result<(devices: Int, latencies: [Double]), StoreError>.self) { group in
            for _ in 0..<options.concurrency {
                group.addTask {
                    var devices = 0, latencies: [Double] = []
                    while clock.now < deadline {
                        let start = Int.random(in: 0..<shuffled.count)
                        let slice = (0..<batch).map { shuffled[(start + $0) % shuffled.count] }
                        let before = clock.now
                        do throws(StoreError) {
                            let found = try await registry.devices(forRecipients: slice, in: app)
                            guard found.count == 2 * batch else {
                                return .failure(.unexpectedResult("\(batch) recipients resolved to \(found.count) devices, expected \(2 * batch)"))
                            }
                            devices += found.count
                        } catch {
                            return .failure(error)
                        }
                        latencies.append((clock.now - before).milliseconds)
                    }
                    return .success((devices, latencies))
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = (clock.now - started).milliseconds / 1000
        var devices = 0, latencies: [Double] = []
        for result in results {
            let figures = try result.get()
            devices += figures.devices
            latencies += figures.latencies
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        return LookupFigures(
            devicesPerSecond: Double(devices) / elapsed, lookupsPerSecond: Double(latencies.count) / elapsed,
            p50: percentile(0.5), p99: percentile(0.99))
    }

    /// Runs `body` for every element with `concurrency` tasks; returns elements per second.
    static func concurrently<Element: Sendable>(
        _ elements: [Element], concurrency: Int, _ body: @escaping @Sendable (Element) async throws(StoreError) -> Void
    ) async throws(StoreError) -> Double {
        let clock = ContinuousClock()
        let started = clock.now
        let failures = await withTaskGroup(of: StoreError?.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    for index in stride(from: worker, to: elements.count, by: concurrency) {
                        do throws(StoreError) { try await body(elements[index]) } catch { return error }
                    }
                    return nil
                }
            }
            return await group.reduce(into: [StoreError]()) { if let error = $1 { $0.append(error) } }
        }
        if let failure = failures.first { throw failure }
        return Double(elements.count) / ((clock.now - started).milliseconds / 1000)
    }
}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
