import Foundation
@testable import PushDelivery
import Testing

@Suite("apns-id generation")
struct APNsIdentifierTests {
    @Test("identifiers across several refills are distinct version 4 UUIDs, written as Foundation writes them in lower case")
    func distinctVersion4() {
        let count = APNsIdentifier.idsPerRefill * 3 + 7
        var seen = Set<UUID>()
        for _ in 0..<count {
            let id = APNsIdentifier.random()
            #expect(id.uuid.6 >> 4 == 4, "version nibble")
            #expect(id.uuid.8 >> 6 == 0b10, "RFC 4122 variant")
            #expect(APNsIdentifier.lowercaseString(id) == id.uuidString.lowercased())
            seen.insert(id)
        }
        #expect(seen.count == count)
    }
}
