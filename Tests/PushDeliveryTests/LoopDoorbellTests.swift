import Foundation
@testable import PushDelivery
import PushRuntime
import Synchronization
import Testing

@Suite("Loop doorbell")
struct LoopDoorbellTests {
    /// Whether the doorbell's pipe holds a wake-up, without waiting.
    private static func rang(_ doorbell: LoopDoorbell) -> Bool {
        var descriptor = pollfd(fd: doorbell.readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 1
    }

    @Test("a lightly sleeping loop is not rung, a soundly sleeping one is, and either sees the announcement")
    func ringsOnlyASoundSleeper() throws {
        let doorbell = try LoopDoorbell()
        #expect(doorbell.timeoutBeforeSleeping(.lightly, timeout: 1000) == LoopDoorbell.lightSleepMilliseconds)
        doorbell.announce()
        #expect(!Self.rang(doorbell))
        #expect(doorbell.timeoutBeforeSleeping(.lightly, timeout: 1000) == 0, "announced: must not sleep")
        #expect(doorbell.takeAnnouncement())
        #expect(!doorbell.takeAnnouncement())

        #expect(doorbell.timeoutBeforeSleeping(.soundly, timeout: 1000) == 1000)
        doorbell.announce()
        #expect(Self.rang(doorbell))
        doorbell.woke()
        doorbell.drain()
        #expect(!Self.rang(doorbell))
        #expect(doorbell.takeAnnouncement())

        // Urgent work rings whatever the mode.
        doorbell.announceUrgently()
        #expect(Self.rang(doorbell))
        #expect(doorbell.takeAnnouncement())
    }

    @Test("prompt work rings a loop asleep, lightly or soundly, and not an awake one, which sees it before sleeping")
    func promptWorkRingsAnySleeper() throws {
        let doorbell = try LoopDoorbell()
        doorbell.announcePromptly()
        #expect(!Self.rang(doorbell), "awake: no ring needed")
        #expect(doorbell.timeoutBeforeSleeping(.lightly, timeout: 1000) == 0, "announced: must not sleep")
        #expect(doorbell.takeAnnouncement())

        for how in [LoopDoorbell.Sleep.lightly, .soundly] {
            #expect(doorbell.timeoutBeforeSleeping(how, timeout: 1000) > 0)
            doorbell.announcePromptly()
            #expect(Self.rang(doorbell), "asleep (\(how)): rung")
            doorbell.woke()
            doorbell.drain()
            #expect(doorbell.takeAnnouncement())
        }
    }

    /// What the announcers and the loop thread share.
    private final class Shared: Sendable {
        /// Items announced and not yet taken.
        let inbox = Mutex(0)
        /// Polls that timed out with items waiting: each a missed announcement.
        let sleptOnWork = Atomic<Int>(0)
        let taken = Atomic<Int>(0)
    }

    /// Announcers and a loop that always sleeps soundly, as long as the test allows: a
    /// missed announcement leaves the loop asleep with work waiting until its poll times
    /// out, which the loop counts.
    /// With `mixed`, announcers also announce promptly: those ring whenever the loop is not
    /// awake, without `announced` deduplicating them first.
    @Test("no announcement is missed: the loop never sleeps on work announced while it went to sleep", arguments: [false, true])
    func noLostWakeUps(mixed: Bool) async throws {
        let doorbell = try LoopDoorbell()
        let announcers = 4
        let perAnnouncer = 5_000
        let total = announcers * perAnnouncer
        let shared = Shared()
        let loopEnded = ShutdownSignal()

        let loop = Thread {
            var done = 0
            while done < total {
                if doorbell.takeAnnouncement() {
                    done += shared.inbox.withLock { count in
                        defer { count = 0 }
                        return count
                    }
                }
                guard done < total else { break }
                var descriptor = pollfd(fd: doorbell.readEnd, events: Int16(POLLIN), revents: 0)
                let timeout = doorbell.timeoutBeforeSleeping(.soundly, timeout: 2_000)
                let ready = poll(&descriptor, 1, timeout)
                doorbell.woke()
                // Timeout zero: work was announced, the loop did not sleep.
                if ready == 0, timeout > 0, shared.inbox.withLock({ $0 }) > 0 {
                    shared.sleptOnWork.add(1, ordering: .relaxed)
                }
                if ready > 0 { doorbell.drain() }
            }
            shared.taken.store(done, ordering: .sequentiallyConsistent)
            loopEnded.trigger()
        }
        loop.start()

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<announcers {
                group.addTask {
                    for index in 0..<perAnnouncer {
                        shared.inbox.withLock { $0 += 1 }
                        if mixed, index % 4 != 0 { doorbell.announcePromptly() } else { doorbell.announce() }
                        if index % 7 == 0 { sched_yield() }
                    }
                }
            }
        }
        await loopEnded.wait()
        #expect(shared.taken.load(ordering: .sequentiallyConsistent) == total)
        #expect(shared.sleptOnWork.load(ordering: .relaxed) == 0)
    }
}
