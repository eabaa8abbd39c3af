import CPostgreSQL

extension PostgresConnection {
    /// Runs one statement (`PQexecParams`: parameters and results in binary format).
    ///
    /// Cancelling the calling task sends a cancel request to the server, so even a long
    /// statement ends promptly with `StoreError.cancelled`. A broken connection gives
    /// `StoreError.connectionLost` and stays broken.
    public func query(_ query: SQLQuery) async throws(StoreError) -> QueryResult {
        try await cancellable { () throws(StoreError) in try execute(query, probeFirst: false) }
    }

    /// `query`, but first checks (without blocking) that the server has not closed the
    /// session while it sat idle; if it has, fails with `connectionLost` and
    /// `mayHaveExecuted == false` so the pool can retry on another connection.
    func queryAfterProbe(_ query: SQLQuery) async throws(StoreError) -> QueryResult {
        try await cancellable { () throws(StoreError) in try execute(query, probeFirst: true) }
    }

    /// `queryAfterProbe` for `ConnectionPool.query`, which leased this connection: it goes
    /// back to `pool` here, on this thread, as soon as the statement is over, and the
    /// caller's task resumes afterwards. Given back after that resumption instead, the
    /// connection stayed leased for as long as the task waited for a turn in a busy
    /// cooperative pool (sealing keeps it full under a backlog), and callers queued behind it
    /// made the pool open connections that only the wait needed.
    func queryAfterProbe(_ query: SQLQuery, returningTo pool: ConnectionPool) async -> Swift.Result<QueryResult, StoreError> {
        let outcome: Swift.Result<QueryResult, StoreError>
        do throws(StoreError) {
            outcome = .success(try await queryAfterProbe(query))
        } catch {
            outcome = .failure(error)
        }
        if let broken = pool.returnToPool(self) {
            // Closed in the background, still counted by the pool (its shutdown waits for it).
            Task { await pool.close(broken) }
        }
        return outcome
    }

    /// Runs `body` on this thread with task cancellation forwarded to the server as a cancel
    /// request. The body is synchronous: nothing else can run on this connection meanwhile.
    func cancellable<Result: Sendable>(_ body: () throws(StoreError) -> Result) async throws(StoreError) -> Result {
        if Task.isCancelled { throw .cancelled }
        let cancel = currentCancelHandle
        // The operation must capture `self` to be isolated to this actor (and so run on this
        // connection's thread); a closure that does not is inferred nonisolated and would run
        // the blocking libpq call on the cooperative pool.
        let outcome = await withTaskCancellationHandler { () async -> Swift.Result<Result, StoreError> in
            self.runHere(body)
        } onCancel: {
            cancel?.cancelInBackground()
        }
        return try outcome.get()
    }

    private func runHere<Result>(_ body: () throws(StoreError) -> Result) -> Swift.Result<Result, StoreError> {
        Swift.Result { () throws(StoreError) -> Result in try body() }
    }

    func execute(_ query: SQLQuery, probeFirst: Bool, preparedAgain: Bool = false) throws(StoreError) -> QueryResult {
        if let failure = query.encodingFailure {
            throw .invalidParameter(index: failure.index, reason: failure.error.reason)
        }
        guard let handle = liveHandle else {
            throw .connectionLost(ConnectionLoss(message: "the connection is closed", sqlState: nil, mayHaveExecuted: false))
        }
        if probeFirst, !probe() {
            throw .connectionLost(ConnectionLoss(
                message: Self.errorMessage(handle), sqlState: nil, mayHaveExecuted: false))
        }
        let bindings = query.bindings
        let types = bindings.map { $0.type.rawValue }
        let lengths = bindings.map { Int32($0.bytes?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: bindings.count)
        // All values in one buffer; the leading byte keeps it non-empty, so that an empty
        // value still gets a non-NULL pointer (NULL would mean SQL NULL).
        var storage: [UInt8] = [0]
        var offsets: [Int?] = []
        offsets.reserveCapacity(bindings.count)
        for binding in bindings {
            guard let bytes = binding.bytes else {
                offsets.append(nil)
                continue
            }
            offsets.append(storage.count)
            storage.append(contentsOf: bytes)
        }
        assert(onOwnThread, "libpq call off the connection's thread")
        let sql = query.sql
        let prepared = try query.isPrepared && preparesStatements
            ? preparedStatement(for: PreparedStatementKey(sql: sql, types: types), on: handle) : nil
        let cancel = currentCancelHandle
        cancel?.begin()
        counters?.statementsSent.add(1, ordering: .relaxed)
        let result: OpaquePointer? = storage.withUnsafeBytes { buffer in
            let values: [UnsafePointer<CChar>?] = offsets.map { offset -> UnsafePointer<CChar>? in
                guard let offset, let base = buffer.baseAddress else { return nil }
                return (base + offset).assumingMemoryBound(to: CChar.self)
            }
            if let prepared {
                return PQexecPrepared(handle, prepared.name, Int32(bindings.count), values, lengths, formats, 1)
            }
            return PQexecParams(handle, sql, Int32(bindings.count), types, values, lengths, formats, 1)
        }
        let cancelRequested = cancel?.end() ?? false
        do {
            return try interpret(result, on: handle, cancelRequested: cancelRequested)
        } catch .server(let error) where error.isMissingPreparedStatement || error.isStalePreparedStatement {
            // Both errors come before the statement runs (at bind, or when its plan is checked),
            // so running it again cannot repeat an effect. Forget it; outside a transaction,
            // which the failure did not abort, prepare it again and run it once more.
            guard let prepared else { throw .server(error) }
            try forgetPrepared(prepared, stale: error.isStalePreparedStatement, on: handle)
            guard isIdleOutsideTransaction, !preparedAgain else { throw .server(error) }
            if Task.isCancelled { throw .cancelled }
            return try execute(query, probeFirst: false, preparedAgain: true)
        }
    }

    /// The server-side name of this statement on this session, preparing it the first time.
    ///
    /// The name is derived from the text and the parameter types, so two clients (or two of
    /// our connections) behind a pooler that shares server sessions can only ever meet the
    /// same statement under one name: "already exists" (42P05) means it is there to use.
    private func preparedStatement(
        for key: PreparedStatementKey, on handle: OpaquePointer
    ) throws(StoreError) -> (key: PreparedStatementKey, name: String) {
        if let name = preparedStatements[key] { return (key, name) }
        let name = key.statementName
        let cancel = currentCancelHandle
        cancel?.begin()
        counters?.statementsPrepared.add(1, ordering: .relaxed)
        let result = PQprepare(handle, name, key.sql, Int32(key.types.count), key.types)
        let cancelRequested = cancel?.end() ?? false
        do {
            _ = try interpret(result, on: handle, cancelRequested: cancelRequested, mayHaveExecuted: false)
        } catch .server(let error) where error.sqlState == "42P05" && isIdleOutsideTransaction {
            // Prepared already on this server session under the same name, hence the same text.
        }
        // A cancel that came too late to stop the prepare still stops the call.
        if cancelRequested || Task.isCancelled { throw .cancelled }
        preparedStatements[key] = name
        return (key, name)
    }

    /// Drops a statement the session cannot use any more. A stale one (its table changed
    /// shape) still exists on the server and is deallocated, outside a transaction; inside a
    /// failed one nothing can run, and the next call outside finds it again (42P05), fails on
    /// it once more and deallocates it then.
    private func forgetPrepared(
        _ statement: (key: PreparedStatementKey, name: String), stale: Bool, on handle: OpaquePointer
    ) throws(StoreError) {
        preparedStatements[statement.key] = nil
        guard stale, isIdleOutsideTransaction else { return }
        let cancel = currentCancelHandle
        cancel?.begin()
        let result = PQexec(handle, "DEALLOCATE \"\(statement.name)\"")
        _ = cancel?.end()
        if let result { PQclear(result) }
        recordTransactionStatus()
        if result == nil || PQstatus(handle) == CONNECTION_BAD {
            markBroken()
            throw .connectionLost(ConnectionLoss(message: Self.errorMessage(handle), sqlState: nil, mayHaveExecuted: false))
        }
    }

    /// Runs a script of several statements with the simple query protocol (`PQexec`): only
    /// for migration files, which are trusted SQL read from the migrations directory. Not
    /// public: application code has only `SQLQuery`.
    func executeScript(_ sql: String) throws(StoreError) {
        guard let handle = liveHandle else {
            throw .connectionLost(ConnectionLoss(message: "the connection is closed", sqlState: nil, mayHaveExecuted: false))
        }
        assert(onOwnThread, "libpq call off the connection's thread")
        let cancel = currentCancelHandle
        cancel?.begin()
        let result = PQexec(handle, sql)
        let cancelRequested = cancel?.end() ?? false
        _ = try interpret(result, on: handle, cancelRequested: cancelRequested)
    }

    /// Turns libpq's result into a `QueryResult` or the right `StoreError`, and notices
    /// when the session is gone.
    /// `mayHaveExecuted` false for a prepare: a connection lost then ran nothing, and the pool
    /// may retry the call elsewhere.
    private func interpret(
        _ result: OpaquePointer?, on handle: OpaquePointer, cancelRequested: Bool, mayHaveExecuted: Bool = true
    ) throws(StoreError) -> QueryResult {
        defer { recordTransactionStatus() }
        guard let result else {
            markBroken()
            throw .connectionLost(ConnectionLoss(message: Self.errorMessage(handle), sqlState: nil, mayHaveExecuted: mayHaveExecuted))
        }
        let status = PQresultStatus(result)
        switch status {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
            return QueryResult(taking: result)
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR:
            let error = ServerError(result: result, fallback: Self.errorMessage(handle))
            PQclear(result)
            if PQstatus(handle) == CONNECTION_BAD || error.endsSession {
                markBroken()
                logger.warning("postgres connection lost", [
                    "sqlstate": .string(error.sqlState ?? ""), "reason": .string(error.message),
                ])
                throw .connectionLost(ConnectionLoss(message: error.message, sqlState: error.sqlState, mayHaveExecuted: mayHaveExecuted))
            }
            if cancelRequested, error.sqlState == "57014" { throw .cancelled }
            throw .server(error)
        case PGRES_EMPTY_QUERY:
            PQclear(result)
            throw .unexpectedResult("the statement is empty")
        default:
            // COPY or pipeline states: the session is in a mode this client never uses.
            let name = PQresStatus(status).map { String(cString: $0) } ?? "status \(status.rawValue)"
            PQclear(result)
            markBroken()
            throw .unexpectedResult("the server answered with \(name); the connection is discarded")
        }
    }
}

/// What identifies a prepared statement on a session: its text and its parameter types.
struct PreparedStatementKey: Hashable, Sendable {
    let sql: String
    let types: [UInt32]

    /// `pushd_` and a 64-bit FNV-1a digest of the text and the types: the same in every
    /// process and release that sends the same statement. Not a security boundary (a
    /// session's statements are its own); only names must not meet by accident.
    var statementName: String {
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            digest ^= UInt64(byte)
            digest &*= 0x0000_0100_0000_01b3
        }
        for byte in sql.utf8 { mix(byte) }
        for type in types {
            mix(0)
            for shift in stride(from: 0, to: 32, by: 8) { mix(UInt8(truncatingIfNeeded: type >> UInt32(shift))) }
        }
        let hex = String(digest, radix: 16)
        return "pushd_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
