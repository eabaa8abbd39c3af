import CPostgreSQL
import PushRuntime

/// Receives the server's notices (`NOTICE: relation … already exists, skipping`) for one
/// connection and logs them at debug level, instead of libpq's default of printing them on
/// standard error, which would break our one-JSON-object-per-line logs.
final class NoticeSink: Sendable {
    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Installs the sink on `connection`. The sink is retained for libpq; the returned
    /// pointer must be given to `release` after `PQfinish`.
    static func install(_ sink: NoticeSink, on connection: OpaquePointer) -> UnsafeMutableRawPointer {
        let context = Unmanaged.passRetained(sink).toOpaque()
        PQsetNoticeProcessor(connection, noticeProcessor, context)
        return context
    }

    static func release(_ context: UnsafeMutableRawPointer) {
        Unmanaged<NoticeSink>.fromOpaque(context).release()
    }
}

private let noticeProcessor: PQnoticeProcessor = { context, message in
    guard let context, let message else { return }
    let sink = Unmanaged<NoticeSink>.fromOpaque(context).takeUnretainedValue()
    sink.logger.debug("postgres notice", ["notice": .string(String(cString: message).trimmingTrailingNewlines())])
}
