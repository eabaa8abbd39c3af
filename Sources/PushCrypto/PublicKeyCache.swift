import Synchronization

/// Parsed device keys by their registered text, so each distinct key is parsed once per
/// process however many notifications it seals.
///
/// Looked up by the key's id when the caller has one (a device's `key_id`, a hash of the
/// text): hashing the id costs a tenth of hashing the text (~400 bytes), on every delivery.
/// A hit still requires the very same text, so an id shared by two texts (registered by hand,
/// say) only makes them evict each other: never one device's key used for another.
///
/// Also found by the SHA-256 of the text (`text(forDigest:)`), for a device lookup that
/// sends digests instead of the texts this cache holds (`KnownPublicKeys`).
///
/// Bounded: when full, the least recently used key is dropped. A refused key is cached too
/// (as its error), so a device with a broken key costs one parse, not one per message.
///
/// A miss costs far more than a hit: OpenSSL's public-key check takes about 5 ms, two
/// hundred envelopes. So the cache also collects the digests of the texts that passed it
/// (`takeNewlyChecked`), for the worker to record in `pushd_public_key_checks`; a text
/// recorded there is parsed with `checkedBefore` by every worker from then on, and a
/// broadcast to more devices than any cache holds checks each key once in the cluster.
public final class PublicKeyCache: Sendable {
    private struct State {
        var entries: [String: Entry] = [:]
        /// The entries indexed by the digest of their text (`Entry.digest`), the very objects
        /// `entries` holds: found by digest in one hash, not by digest to name then by name.
        var byDigest: [KeyDigest: Entry] = [:]
        var clock: UInt64 = 0
        /// SHA-256 of the texts that passed the full check, not yet handed to
        /// `takeNewlyChecked` (each again until the lookup reports it recorded).
        var newlyChecked: Set<[UInt8]> = []
        /// SHA-256 of every text that passed the full check in this process, or was parsed on
        /// the word of its record and made findable by digest (at most `passedCapacity`, then
        /// forgotten all at once): an evicted key parsed again, or a
        /// key met again before its record is read back, is not checked twice.
        var passed: Set<[UInt8]> = []
        var fullChecks = 0
        /// Lookups by text that found their key, and all of them, halved together past 1,024:
        /// the recent hit ratio.
        var recentHits = 0
        var recentLookups = 0

        /// Whether most recent lookups hit: see `prefersDigests`.
        var prefersDigests: Bool { recentLookups > 0 && 2 * recentHits >= recentLookups }

        mutating func countLookup(hit: Bool) {
            if recentLookups >= 1024 {
                recentHits /= 2
                recentLookups /= 2
            }
            recentLookups += 1
            if hit { recentHits += 1 }
        }
    }

    /// One cached key. A class so that the digest index points at the entry itself, and a hit
    /// marks it used in place: as a struct in the dictionary's values, every hit copied it out
    /// (a retain and a release of its text and key), and a lookup by digest hashed its digest,
    /// then its name. Only ever touched under the lock, and never handed out of it.
    private final class Entry {
        let text: String
        /// The SHA-256 of `text`, once the entry is indexed by it (`byDigest`): computed (about
        /// 0.7 µs) only while digests are preferred or the text's full check needs it anyway.
        var digest: KeyDigest?
        let result: Result<DevicePublicKey, PublicKeyError>
        var lastUse: UInt64

        init(text: String, digest: KeyDigest?, result: Result<DevicePublicKey, PublicKeyError>, lastUse: UInt64) {
            self.text = text
            self.digest = digest
            self.result = result
            self.lastUse = lastUse
        }
    }

    private let state = Mutex(State())
    public let capacity: Int
    private var passedCapacity: Int { max(4096, capacity * 4) }

    /// Each key held costs about 3.6 KiB resident (`pushd bench crypto` measures it), so
    /// `capacity` is what bounds this cache's memory; each check remembered (up to
    /// `max(4096, 4 × capacity)`) about 80 bytes more.
    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    /// The parsed key for `text`, parsing it on first use. `id` names the text (its
    /// `key_id`); without one the text is its own name. `checkedBefore` says that this very
    /// text passed the full check before (its digest is in `pushd_public_key_checks`): a
    /// miss then leaves out OpenSSL's public-key check, not the size and exponent checks.
    public func key(for text: String, id: String? = nil, checkedBefore: Bool = false) throws(PublicKeyError) -> DevicePublicKey {
        let name = id ?? text
        // One hash under the lock, not three: every delivery passes here, from every sealing
        // thread at once.
        let lookup = state.withLock { state -> (cached: Result<DevicePublicKey, PublicKeyError>, index: Bool)? in
            state.clock += 1
            guard let entry = state.entries[name], entry.text == text else {
                state.countLookup(hit: false)
                return nil
            }
            entry.lastUse = state.clock
            state.countLookup(hit: true)
            // An entry made while digests were not preferred is indexed on its first hit after.
            return (entry.result, state.prefersDigests && entry.digest == nil)
        }
        if let lookup {
            if lookup.index { index(text, name: name, digest: DevicePublicKey.checkDigest(ofKeyText: text)) }
            return try lookup.cached.get()
        }
        // Parse outside the lock: two tasks may parse the same new key at once, which is
        // harmless and better than serialising every parse behind one lock.
        let prefersDigests = state.withLock { $0.prefersDigests }
        let textDigest = checkedBefore && !prefersDigests ? nil : DevicePublicKey.checkDigest(ofKeyText: text)
        let digest = checkedBefore ? nil : textDigest
        let passedHere = digest.map { digest in state.withLock { $0.passed.contains(digest) } } ?? false
        let check: DevicePublicKey.PublicKeyCheck = checkedBefore || passedHere ? .passedBefore : .run
        let result: Result<DevicePublicKey, PublicKeyError>
        do throws(PublicKeyError) {
            result = .success(try DevicePublicKey(parsing: text, publicKeyCheck: check))
        } catch {
            result = .failure(error)
        }
        let passed = (try? result.get()) != nil
        state.withLock { state in
            state.clock += 1
            if check == .run { state.fullChecks += 1 }
            // A text that passed and is indexed by digest is remembered as passed, checked in
            // full here (`digest`, which is then `textDigest`) or on its record's word. One
            // checked here is also handed out to be recorded: until the record is read back,
            // this process remembers on its own (32 bytes a key, against 3.6 KiB parsed).
            if passed, let textDigest { Self.rememberPassed(textDigest, in: &state, capacity: passedCapacity) }
            if passed, let digest, state.newlyChecked.count < capacity { state.newlyChecked.insert(digest) }
            if state.entries.count >= capacity, state.entries[name] == nil {
                evictOldest(&state)
            }
            let entry = Entry(text: text, digest: textDigest.map(KeyDigest.init), result: result, lastUse: state.clock)
            if let replaced = state.entries.updateValue(entry, forKey: name) { Self.unindex(replaced, in: &state) }
            if let digest = entry.digest { state.byDigest[digest] = entry }
        }
        return try result.get()
    }

    /// Indexes the entry `name` by `digest` if it still holds `text` unindexed.
    private func index(_ text: String, name: String, digest: [UInt8]) {
        let key = KeyDigest(digest)
        state.withLock { state in
            guard let entry = state.entries[name], entry.digest == nil, entry.text == text else { return }
            entry.digest = key
            state.byDigest[key] = entry
            if case .success = entry.result { Self.rememberPassed(digest, in: &state, capacity: passedCapacity) }
        }
    }

    /// Records that the text of `digest` passed (the full check here, or parsed on the word
    /// of its record) when its entry becomes findable by digest. A device row whose text came
    /// from here by digest says nothing of that record (`KnownPublicKeys`), so if the entry is
    /// gone when sealing looks (evicted in between, or kept under another id) the text is
    /// parsed again without `checkedBefore`: remembered, it is not checked in full after all.
    private static func rememberPassed(_ digest: [UInt8], in state: inout State, capacity: Int) {
        if state.passed.count >= capacity { state.passed.removeAll(keepingCapacity: true) }
        state.passed.insert(digest)
    }

    /// The text of the cached key whose text has this SHA-256 (32 bytes), marking it used;
    /// nil if none is cached. A device lookup that gets the text here does not fetch it, and
    /// sealing then finds the parsed key by that text as usual.
    public func text(forDigest digest: UnsafeRawBufferPointer) -> String? {
        guard let key = KeyDigest(digest) else { return nil }
        return state.withLock { state -> String? in
            guard let entry = state.byDigest[key] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            return entry.text
        }
    }

    /// The share of the recent lookups by text (about the last thousand) that found their key
    /// here; 0 before any.
    public var recentHitRatio: Double {
        state.withLock { $0.recentLookups == 0 ? 0 : Double($0.recentHits) / Double($0.recentLookups) }
    }

    /// Whether at least half the recent lookups found their key: a device lookup then asks for
    /// digests instead of texts (`KnownPublicKeys`), and entries are indexed by digest. When
    /// most miss, as in a broadcast to more devices than this cache holds, the texts would be
    /// fetched in a second round trip anyway, and a miss spares the digest unless the key's
    /// full check needs it.
    public var prefersDigests: Bool { state.withLock { $0.prefersDigests } }

    /// How many parses ran with OpenSSL's public-key check (about 5 ms each), counting those
    /// refused before it ran (unparseable, wrong size or exponent).
    public var fullChecks: Int { state.withLock { $0.fullChecks } }

    public var count: Int { state.withLock { $0.entries.count } }

    /// The SHA-256 digests of the texts that passed the full check and were looked up since
    /// the last call without `checkedBefore` (at most `capacity` are kept between calls).
    /// Recording them is the caller's business; one lost is handed out again the next time
    /// its key is parsed, and at worst costs another check in another process.
    public func takeNewlyChecked() -> [[UInt8]] {
        state.withLock { state in
            defer { state.newlyChecked = [] }
            return Array(state.newlyChecked)
        }
    }

    /// Puts back digests `takeNewlyChecked` handed out that could not be recorded (within
    /// the same bound), for the next call to hand out again.
    public func returnNewlyChecked(_ digests: [[UInt8]]) {
        state.withLock { state in
            for digest in digests where state.newlyChecked.count < capacity { state.newlyChecked.insert(digest) }
        }
    }

    /// Drops the least recently used eighth of the cache in one pass, so eviction costs
    /// O(n) once per capacity/8 insertions rather than on every insertion.
    private func evictOldest(_ state: inout State) {
        let dropCount = max(1, capacity / 8)
        let oldest = state.entries.sorted { $0.value.lastUse < $1.value.lastUse }.prefix(dropCount)
        for (name, entry) in oldest {
            state.entries.removeValue(forKey: name)
            Self.unindex(entry, in: &state)
        }
    }

    /// Drops `entry` (gone from `entries`) from the digest index, unless another entry with
    /// the same text has taken its digest since.
    private static func unindex(_ entry: Entry, in state: inout State) {
        if let digest = entry.digest, state.byDigest[digest] === entry { state.byDigest[digest] = nil }
    }
}

/// A SHA-256 as four words: hashed and compared without an allocation.
struct KeyDigest: Hashable, Sendable {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// Nil unless `bytes` are 32.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 32 else { return nil }
        words = (
            bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
            bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
    }

    /// From what `Digest.sha256` returned, always 32 bytes.
    init(_ digest: [UInt8]) {
        precondition(digest.count == 32, "a SHA-256 is 32 bytes")
        words = digest.withUnsafeBytes { bytes in
            (bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
             bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
    }

    static func == (lhs: KeyDigest, rhs: KeyDigest) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }

    /// One word of the four: a SHA-256 is uniformly spread already, and the dictionary's
    /// seeded hash of 8 bytes costs a third of its hash of 32, on every delivery.
    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
    }
}
