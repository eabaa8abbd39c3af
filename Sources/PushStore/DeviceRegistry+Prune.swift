import Foundation

extension DeviceRegistry {
    /// Deletes a token a provider declared dead (`pushd_prune_token`). Returns whether a
    /// device was deleted; false if it was already gone or re-registered after
    /// `invalidSince`.
    public func prune(_ request: PruneRequest) async throws(StoreError) -> Bool {
        try await pool.query("""
            SELECT pushd_prune_token(\(request.appID), \(request.platform), \(request.environment), \(request.token), \(request.invalidSince))
            """).singleRow().decode(Bool.self, column: 0)
    }

    /// `prune` for many tokens in one round trip and one transaction; the results are in the
    /// order of `requests`. The batch is atomic: an argument the database refuses (SQLSTATE
    /// `22023`) fails the whole batch. Rows are visited in a fixed order (by app, platform,
    /// environment, token), so concurrent batches cannot deadlock on each other.
    public func pruneBatch(_ requests: [PruneRequest]) async throws(StoreError) -> [Bool] {
        guard !requests.isEmpty else { return [] }
        let order = requests.indices.sorted { lhs, rhs in
            let a = requests[lhs], b = requests[rhs]
            return (a.appID, a.platform.rawValue, a.environment?.rawValue ?? "", a.token, lhs)
                < (b.appID, b.platform.rawValue, b.environment?.rawValue ?? "", b.token, rhs)
        }
        let sorted = order.map { requests[$0] }
        let result = try await pool.query("""
            SELECT u.n, pushd_prune_token(u.app_id, u.platform, u.environment, u.token, u.invalid_since)
            FROM unnest(\(sorted.map(\.appID)), \(sorted.map(\.platform.rawValue)), \(sorted.map { $0.environment?.rawValue }),
                        \(sorted.map(\.token)), \(sorted.map(\.invalidSince)))
                 WITH ORDINALITY AS u(app_id, platform, environment, token, invalid_since, n)
            ORDER BY u.n
            """)
        guard result.count == requests.count else {
            throw .unexpectedResult("pruned \(result.count) tokens of \(requests.count)")
        }
        var pruned = [Bool](repeating: false, count: requests.count)
        for row in result {
            let (position, deleted) = try row.decode((Int64, Bool).self)
            guard position >= 1, position <= order.count else { throw .unexpectedResult("ordinal \(position) out of range") }
            pruned[order[Int(position) - 1]] = deleted
        }
        return pruned
    }
}
