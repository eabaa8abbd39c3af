import COpenSSL
import Foundation
import Synchronization

/// The `apns-id` of a push: a random (version 4) UUID, sent in lower case.
///
/// Made for every push, so neither step goes through Foundation: on Linux `UUID()` opens
/// `/dev/urandom` on every call (2–3% of a worker's CPU while a backlog drained), and
/// `uuidString.lowercased()` builds two strings. The randomness is OpenSSL's, fetched for
/// `idsPerRefill` identifiers at a time: a `RAND_bytes` call costs about 1.7 µs whatever
/// its length (a DRBG rekey and a `getpid` system call), 1% of a worker's CPU when made
/// per push. An `apns-id` is no secret (APNs echoes it; it only names a push in logs), so
/// holding the next few in memory exposes nothing. The reserve is ordinary memory: a
/// process forked with ids left would hand out the same ones as its parent, so ids could
/// repeat, no more (pushd starts processes with `posix_spawn`, never forks).
public enum APNsIdentifier {
    static let idsPerRefill = 256
    private static let reserve = Mutex(Reserve())

    public static func random() -> UUID {
        guard var value = reserve.withLock({ $0.next() }) else { return UUID() }
        value.6 = value.6 & 0x0F | 0x40  // version 4
        value.8 = value.8 & 0x3F | 0x80  // RFC 4122 variant
        return UUID(uuid: value)
    }

    /// Generator output for the next identifiers, each 16 bytes handed out once.
    private struct Reserve {
        private var bytes = [UInt8](repeating: 0, count: 16 * APNsIdentifier.idsPerRefill)
        private var cursor = 16 * APNsIdentifier.idsPerRefill

        /// The next 16 random bytes, or nil if the generator failed.
        mutating func next() -> uuid_t? {
            if cursor == bytes.count {
                let count = Int32(bytes.count)
                guard bytes.withUnsafeMutableBufferPointer({ RAND_bytes($0.baseAddress, count) == 1 }) else { return nil }
                cursor = 0
            }
            defer { cursor += 16 }
            return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: cursor, as: uuid_t.self) }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `uuidString.lowercased()`, written in one pass.
    public static func lowercaseString(_ uuid: UUID) -> String {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { output in
                var cursor = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        output[cursor] = UInt8(ascii: "-")
                        cursor += 1
                    }
                    output[cursor] = hexDigits[Int(byte >> 4)]
                    output[cursor + 1] = hexDigits[Int(byte & 0x0F)]
                    cursor += 2
                }
                return cursor
            }
        }
    }
}
