import Synchronization

/// Parsed device keys by their registered text, so each distinct key is parsed once per
/// process however many notifications it seals.
///
/// Looked up by the key's id when the caller has one (a device's `key_id`, a hash of the
/// text): hashing the id costs a tenth of hashing the text (~400 bytes), on every delivery.
/// A hit still requires the very same text, so an id shared by two texts (registered by hand,
/// say) only makes them evict each other: never one device's key used for another.
///
/// Bounded: when full, the least recently used key is dropped. A refused key is cached too
/// (as its error), so a device with a broken key costs one parse, not one per message.
public final class PublicKeyCache: Sendable {
    private struct State {
        var entries: [String: Entry] = [:]
        var clock: UInt64 = 0
    }

    private struct Entry {
        let text: String
        let result: Result<DevicePublicKey, PublicKeyError>
        var lastUse: UInt64
    }

    private let state = Mutex(State())
    public let capacity: Int

    /// Each key held costs about 3.3 KiB resident (`pushd bench crypto` measures it), so
    /// `capacity` is what bounds this cache's memory.
    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    /// The parsed key for `text`, parsing it on first use. `id` names the text (its
    /// `key_id`); without one the text is its own name.
    public func key(for text: String, id: String? = nil) throws(PublicKeyError) -> DevicePublicKey {
        let name = id ?? text
        // One hash under the lock, not three: every delivery passes here, from every sealing
        // thread at once.
        if let cached = state.withLock({ state -> Result<DevicePublicKey, PublicKeyError>? in
            state.clock += 1
            guard let index = state.entries.index(forKey: name), state.entries.values[index].text == text else { return nil }
            state.entries.values[index].lastUse = state.clock
            return state.entries.values[index].result
        }) {
            return try cached.get()
        }
        // Parse outside the lock: two tasks may parse the same new key at once, which is
        // harmless and better than serialising every parse behind one lock.
        let result: Result<DevicePublicKey, PublicKeyError>
        do throws(PublicKeyError) { result = .success(try DevicePublicKey(parsing: text)) } catch { result = .failure(error) }
        state.withLock { state in
            state.clock += 1
            if state.entries.count >= capacity, state.entries[name] == nil {
                evictOldest(&state)
            }
            state.entries[name] = Entry(text: text, result: result, lastUse: state.clock)
        }
        return try result.get()
    }

    public var count: Int { state.withLock { $0.entries.count } }

    /// Drops the least recently used eighth of the cache in one pass, so eviction costs
    /// O(n) once per capacity/8 insertions rather than on every insertion.
    private func evictOldest(_ state: inout State) {
        let dropCount = max(1, capacity / 8)
        let oldest = state.entries.sorted { $0.value.lastUse < $1.value.lastUse }.prefix(dropCount)
        for (name, _) in oldest { state.entries.removeValue(forKey: name) }
    }
}
