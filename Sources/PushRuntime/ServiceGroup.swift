import Dispatch
import Foundation

/// A long-running part of a process (a consumer, an HTTP/2 loop, the metrics endpoint).
/// `run` returns when the work is done or, after `shutdown` is triggered, once in-flight
/// work has been finished and resources released.
public protocol Service: Sendable {
    var name: String { get }
    func run(shutdown: ShutdownSignal) async throws
}

/// Runs services side by side and stops them gracefully, as swift-service-lifecycle does:
/// SIGTERM or SIGINT (or `shutdown()`) stops the services in reverse order of start, each
/// given the time left of `gracefulShutdownTimeout`; whatever is still running after that
/// is cancelled. If one service fails, the others are shut down the same way.
public final class ServiceGroup: Sendable {
    private let services: [any Service]
    private let signals: [ShutdownSignal]
    private let gracefulShutdownTimeout: Duration
    private let logger: Logger
    private let groupShutdown = ShutdownSignal()

    public init(services: [any Service], gracefulShutdownTimeout: Duration = .seconds(30), logger: Logger) {
        self.services = services
        self.signals = services.map { _ in ShutdownSignal() }
        self.gracefulShutdownTimeout = gracefulShutdownTimeout
        self.logger = logger
    }

    /// Asks every service to stop (the same as receiving SIGTERM).
    public func shutdown() {
        groupShutdown.trigger()
    }

    /// Runs until every service has returned. Throws the first service error, if any.
    public func run(handlingSignals signalNumbers: [Int32] = [SIGTERM, SIGINT]) async throws {
        let sources = signalNumbers.map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [logger, groupShutdown] in
                logger.info("signal received, shutting down gracefully", ["signal": .int(Int(number))])
                groupShutdown.trigger()
            }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }

        let finished = services.map { _ in ShutdownSignal() }
        try await withThrowingTaskGroup(of: Completion.self) { group in
            for (index, service) in services.enumerated() {
                group.addTask { [logger, signals] in
                    defer { finished[index].trigger() }
                    do {
                        try await service.run(shutdown: signals[index])
                        logger.info("service stopped", ["service": .string(service.name)])
                        return .service
                    } catch {
                        logger.error("service failed", ["service": .string(service.name), "error": .string("\(error)")])
                        throw error
                    }
                }
            }
            group.addTask { [self] in
                await groupShutdown.wait()
                return await stopInReverseOrder(finished: finished) ? .stopped : .timedOut
            }
            var firstError: (any Error)?
            var servicesRunning = services.count
            while let result = await group.nextResult() {
                switch result {
                case .failure(let error):
                    servicesRunning -= 1
                    if firstError == nil { firstError = error }
                case .success(.service):
                    servicesRunning -= 1
                case .success(.timedOut):
                    logger.warning("graceful shutdown timed out; cancelling the remaining services")
                    group.cancelAll()
                case .success(.stopped):
                    break
                }
                // Any service ending (failed or done) stops the others too.
                groupShutdown.trigger()
                if servicesRunning == 0 && group.isEmpty { break }
            }
            if let firstError { throw firstError }
        }
    }

    private enum Completion {
        case service, stopped, timedOut
    }

    /// Stops services last-started first, each waited for before the next is asked, all
    /// within one deadline. Returns false if the deadline passed first.
    private func stopInReverseOrder(finished: [ShutdownSignal]) async -> Bool {
        let deadline = ContinuousClock.now + gracefulShutdownTimeout
        for index in services.indices.reversed() {
            logger.info("stopping service", ["service": .string(services[index].name)])
            signals[index].trigger()
            let stopped = await withTaskGroup(of: Bool.self) { race in
                race.addTask { await finished[index].wait(); return true }
                race.addTask {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    return false
                }
                let first = await race.next() ?? false
                race.cancelAll()
                return first
            }
            if !stopped { return false }
        }
        return true
    }
}
