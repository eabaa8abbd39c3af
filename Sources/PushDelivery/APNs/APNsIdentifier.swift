import COpenSSL
import Foundation

/// The `apns-id` of a push: a random (version 4) UUID, sent in lower case.
///
/// Made for every push, so neither step goes through Foundation: on Linux `UUID()` opens
/// `/dev/urandom` on every call (2–3% of a worker's CPU while a backlog drained), and
/// `uuidString.lowercased()` builds two strings. OpenSSL's per-thread generator gives the
/// randomness without a system call.
public enum APNsIdentifier {
    public static func random() -> UUID {
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let filled = withUnsafeMutableBytes(of: &value) { bytes in
            RAND_bytes(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(bytes.count)) == 1
        }
        guard filled else { return UUID() }
        value.6 = value.6 & 0x0F | 0x40  // version 4
        value.8 = value.8 & 0x3F | 0x80  // RFC 4122 variant
        return UUID(uuid: value)
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
