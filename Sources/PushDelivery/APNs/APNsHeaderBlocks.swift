import Synchronization

/// The shared header blocks of the latest kinds of push (`APNsNotification.SharedHeadersKey`
/// and provider token), so the devices of a job share one, encoded once.
///
/// Looked up once per push, from every sealing thread, so by hash: the blocks of the
/// current provider token by key. A list of the last 16 searched newest first was tested
/// entry by entry, and several jobs run at once, so a push tested three to six entries,
/// each a copy or a retain of objects the other sealing threads were touching too (33, then
/// 7, reference-count operations per delivery in callgrind). The key hashes the bundle id and
/// collapse id, about 60 bytes; the provider token (some 250) is compared, not hashed, and
/// is usually the very same string, which `==` sees without reading it.
final class APNsHeaderBlocks: Sendable {
    private struct State {
        /// The provider token (the `authorization` value) every block in `blocks` carries.
        var authorization = ""
        var blocks: [APNsNotification.SharedHeadersKey: HeaderBlock] = [:]
    }

    /// More kinds of push than this at once is unusual (a worker delivers a few jobs at a
    /// time); past it the table starts again, which costs a block rebuilt per kind.
    static let kept = 64
    private let state = Mutex(State())

    func block(for notification: APNsNotification, bearer: BearerToken) -> HeaderBlock {
        let authorization = bearer.authorization
        let key = notification.sharedHeadersKey
        if let found = state.withLock({ state in state.authorization == authorization ? state.blocks[key] : nil }) {
            return found
        }
        let block = HeaderBlock(notification.sharedHeaders(authorization: authorization))
        state.withLock { state in
            // A new provider token replaces the old within seconds (pushes already signed
            // with the old one finish with it): its blocks go.
            if state.authorization != authorization {
                state.authorization = authorization
                state.blocks.removeAll(keepingCapacity: true)
            } else if state.blocks.count >= Self.kept {
                state.blocks.removeAll(keepingCapacity: true)
            }
            state.blocks[key] = block
        }
        return block
    }
}
