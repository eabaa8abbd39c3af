#if canImport(Glibc)
import Glibc
#endif
@testable import PushCrypto
import Testing

/// Runs `body` with a buffer of one draw's length and returns what it holds afterwards.
func withDrawBuffer(_ body: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows -> [UInt8] {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: RandomReserve.drawLength, alignment: 1)
    defer { buffer.deallocate() }
    try body(buffer)
    return Array(buffer)
}

@Suite("Random reserve for content keys and nonces")
struct RandomReserveTests {
    static func draw(from reserve: RandomReserve) throws -> [UInt8] {
        try withDrawBuffer { try reserve.draw(into: $0) }
    }

    @Test("draws across several refills are all different and full length")
    func drawsAreDistinct() throws {
        let reserve = try #require(RandomReserve.make())
        let count = RandomReserve.drawsPerRefill * 3 + 5
        var draws = Set<[UInt8]>()
        for _ in 0..<count {
            let bytes = try Self.draw(from: reserve)
            #expect(bytes.contains { $0 != 0 })
            draws.insert(bytes)
        }
        #expect(draws.count == count)
    }

    @Test("a set-aside draw is taken exactly once, and is not an ordinary draw")
    func setAsideTakenOnce() throws {
        let reserve = try #require(RandomReserve.make())
        let setAside = Array(try reserve.setAside())
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: RandomReserve.drawLength, alignment: 1)
        defer { buffer.deallocate() }
        #expect(reserve.takeSetAside(into: buffer))
        #expect(Array(buffer) == setAside)
        #expect(!reserve.takeSetAside(into: buffer))
        #expect(try Self.draw(from: reserve) != setAside)
    }

    #if os(Linux)
    @Test("a forked child finds the reserve and the set-aside draw wiped, so it cannot reuse the parent's bytes")
    func wipedInForkedChild() throws {
        let reserve = try #require(RandomReserve.make())
        _ = try reserve.setAside()
        #expect(reserve.isFilled)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: RandomReserve.drawLength, alignment: 1)
        defer { buffer.deallocate() }
        let child = fork()
        if child == 0 {
            // Only memory reads and writes and _exit: the child of a multithreaded process
            // must not take locks.
            _exit(reserve.isFilled || reserve.takeSetAside(into: buffer) ? 1 : 0)
        }
        #expect(child > 0)
        var status: Int32 = 0
        #expect(waitpid(child, &status, 0) == child)
        #expect(status == 0, "the child still saw the parent's random bytes")
        #expect(reserve.isFilled)
        #expect(reserve.takeSetAside(into: buffer), "the parent keeps its own")
    }
    #endif
}
