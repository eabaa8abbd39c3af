import Synchronization

/// The shared header blocks of the latest kinds of push (`APNsNotification.SharedHeadersKey`
/// and provider token), so the devices of a job share one, encoded once.
///
/// A handful of entries: a worker delivers a few jobs at a time, each of one kind per
/// environment, and the provider token changes every 50 minutes. Looking one up compares a
/// few fields, under a lock held for that long.
final class APNsHeaderBlocks: Sendable {
    private struct Entry {
        let key: APNsNotification.SharedHeadersKey
        let authorization: String
        let block: HeaderBlock

        func matches(_ key: APNsNotification.SharedHeadersKey, _ authorization: String) -> Bool {
            self.key == key && self.authorization == authorization
        }
    }

    static let kept = 16
    private let entries = Mutex<[Entry]>([])

    func block(for notification: APNsNotification, bearer: BearerToken) -> HeaderBlock {
        let key = notification.sharedHeadersKey
        let authorization = bearer.authorization
        // Compared where they lie, newest first: `last(where:)` ran unspecialised here,
        // copying each entry (a retain and a release of its strings and block) to test it.
        if let found = entries.withLock({ entries -> HeaderBlock? in
            entries.withUnsafeBufferPointer { entries -> HeaderBlock? in
                for index in entries.indices.reversed() where entries[index].matches(key, authorization) {
                    return entries[index].block
                }
                return nil
            }
        }) {
            return found
        }
        let block = HeaderBlock(notification.sharedHeaders(authorization: authorization))
        entries.withLock { entries in
            if entries.count == Self.kept { entries.removeFirst() }
            entries.append(Entry(key: key, authorization: authorization, block: block))
        }
        return block
    }
}
