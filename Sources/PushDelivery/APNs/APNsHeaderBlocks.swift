import Synchronization

/// The shared header blocks of the kinds of push being sent (`APNsNotification.SharedHeadersKey`)
/// under the current provider token and the one before it, so the devices of a job share
/// one block, encoded once.
///
/// Looked up once per push, from every sealing thread, so by hash: the key's five fields
/// (mostly the bundle id and collapse id, some 60 bytes) are hashed; the provider token (some
/// 250 bytes) is compared, not hashed, and is usually the very same string, which `==` sees
/// without reading it. Two generations of tokens: after a renewal, pushes signed with the old
/// token (resends after a lost connection, bearers taken just before) keep using their blocks
/// instead of each emptying the new token's table and being emptied by it in turn.
final class APNsHeaderBlocks: Sendable {
    private struct Generation {
        /// The provider token (the `authorization` value) every block here carries.
        var authorization = ""
        var blocks: [APNsNotification.SharedHeadersKey: HeaderBlock] = [:]
    }

    private struct State {
        var current = Generation()
        var previous = Generation()
        /// The block found last, tried before either table: the devices of a job follow one
        /// another, and comparing the key (its strings mostly the very ones of the last push,
        /// or a short bundle id) costs a fraction of hashing it.
        var last: (key: APNsNotification.SharedHeadersKey, authorization: String, block: HeaderBlock)?
    }

    /// Kinds of push kept per token. More at once is unusual (a worker delivers a few jobs
    /// at a time); past it that token's table starts again, which costs a block rebuilt per kind.
    static let kept = 64
    private let state = Mutex(State())

    func block(for notification: APNsNotification, bearer: BearerToken) -> HeaderBlock {
        let authorization = bearer.authorization
        let key = notification.sharedHeadersKey
        if let found = state.withLock({ state -> HeaderBlock? in
            if let last = state.last, last.authorization == authorization, last.key == key { return last.block }
            let found: HeaderBlock? =
                if state.current.authorization == authorization { state.current.blocks[key] }
                else if state.previous.authorization == authorization { state.previous.blocks[key] }
                else { nil }
            if let found { state.last = (key, authorization, found) }
            return found
        }) {
            return found
        }
        let block = HeaderBlock(notification.sharedHeaders(authorization: authorization))
        state.withLock { state in
            state.last = (key, authorization, block)
            if state.current.authorization == authorization {
                Self.insert(block, for: key, into: &state.current)
            } else if state.previous.authorization == authorization {
                Self.insert(block, for: key, into: &state.previous)
            } else {
                // A token not seen yet: a renewal. The current one becomes the previous.
                state.previous = state.current
                state.current = Generation(authorization: authorization, blocks: [key: block])
            }
        }
        return block
    }

    /// How many blocks are held, for tests of the bound.
    var count: Int { state.withLock { $0.current.blocks.count + $0.previous.blocks.count } }

    private static func insert(_ block: HeaderBlock, for key: APNsNotification.SharedHeadersKey, into generation: inout Generation) {
        if generation.blocks.count >= kept { generation.blocks.removeAll(keepingCapacity: true) }
        generation.blocks[key] = block
    }
}
