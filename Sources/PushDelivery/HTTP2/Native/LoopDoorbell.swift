import Foundation
import Synchronization

/// How threads that hand work to a `poll` loop tell it, without a system call per request.
///
/// Waking a loop blocked in `poll` is a pipe write, and on a busy machine the wake-up it
/// causes (another thread scheduled, an inter-processor interrupt on a VM) cost about 15 µs,
/// about a fifth of a whole delivery's CPU when every request rang. So the loop says how it
/// sleeps:
/// - `.soundly`: in `poll` with no bound the caller can count on; whoever announces work
///   rings the bell (one byte on the pipe).
/// - `.lightly`: in `poll` for at most `lightSleepMilliseconds`; it looks for work
///   before it sleeps again, so an announcement needs no ring (but a prompt one).
/// - `.awake`: between two `poll`s; it looks for work before the next, so nothing rings.
///
/// The loop sleeps lightly only while requests keep arriving (see `NativeHTTP2Loop`): under
/// load it then takes new requests each time a response wakes it, or within a millisecond,
/// and an idle loop sleeps soundly and is rung at once.
///
/// No announcement is missed: the loop publishes `.soundly` and then reads `announced`;
/// an announcer sets `announced` and then reads the mode, all sequentially consistent. So
/// either the loop sees the announcement and does not sleep, or the announcer sees the mode
/// and rings.
final class LoopDoorbell: Sendable {
    enum Sleep: UInt8 {
        case lightly = 0
        case soundly = 1
        /// Between `poll`s: whatever is announced is seen before the next one.
        case awake = 2
    }

    /// The longest a light sleep lasts, which is also the longest a request announced
    /// without a ring waits for the loop.
    static let lightSleepMilliseconds: Int32 = 1

    /// The end of the pipe the loop polls.
    let readEnd: Int32
    private let writeEnd: Int32
    private let announced = Atomic<Bool>(false)
    private let sleep = Atomic<UInt8>(Sleep.awake.rawValue)

    init() throws(HTTPClientError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw .transport(code: -1, message: "pipe: \(String(cString: strerror(errno)))") }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        Foundation.close(readEnd)
        Foundation.close(writeEnd)
    }

    // MARK: - Announcing threads

    /// Work was added to the loop's inbox: rings only if the loop sleeps soundly and nobody
    /// announced since it last looked.
    func announce() {
        guard !announced.exchange(true, ordering: .sequentiallyConsistent) else { return }
        if sleep.load(ordering: .sequentiallyConsistent) == Sleep.soundly.rawValue { ring() }
    }

    /// Work that should not wait out a light sleep (a task's job, which may be a whole job's
    /// first push): rings unless the loop is awake, where it sees the announcement anyway.
    func announcePromptly() {
        announced.store(true, ordering: .sequentiallyConsistent)
        if sleep.load(ordering: .sequentiallyConsistent) != Sleep.awake.rawValue { ring() }
    }

    /// Work the loop must see now, however it sleeps (a cancellation, a stop, a DNS answer).
    func announceUrgently() {
        announced.store(true, ordering: .sequentiallyConsistent)
        ring()
    }

    /// One byte on the pipe. The pipe lives as long as this object, so a write never meets
    /// a closed descriptor; a full pipe already holds a wake-up, so a failed write loses
    /// nothing.
    private func ring() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    // MARK: - The loop thread

    /// The loop left work in its own inbox (jobs past a pass's budget): it takes it in the
    /// next pass, and its next `poll` does not wait. No ring: the loop is awake.
    func announceFromLoop() {
        announced.store(true, ordering: .sequentiallyConsistent)
    }

    /// True when work was announced since the last call; the loop then takes its inbox.
    func takeAnnouncement() -> Bool {
        announced.exchange(false, ordering: .sequentiallyConsistent)
    }

    /// Publishes how the loop is about to sleep and returns the `poll` timeout to use:
    /// `timeout`, shortened to a light sleep's bound when sleeping lightly, and zero when
    /// work was announced meanwhile (the loop must not sleep on it).
    func timeoutBeforeSleeping(_ how: Sleep, timeout: Int32) -> Int32 {
        sleep.store(how.rawValue, ordering: .sequentiallyConsistent)
        if announced.load(ordering: .sequentiallyConsistent) { return 0 }
        return how == .lightly ? min(timeout, Self.lightSleepMilliseconds) : timeout
    }

    /// After `poll`: announcements need no ring until the loop sleeps again.
    func woke() {
        sleep.store(Sleep.awake.rawValue, ordering: .sequentiallyConsistent)
    }

    /// Empties the pipe after `poll` reported it readable.
    func drain() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &bytes, { read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }
}
