import Foundation
import Testing

@testable import PushDelivery

/// The table of shared APNs header blocks: one block per kind of push and provider token,
/// and never a block that says something other than the push it is used for.
@Suite("APNs shared header blocks")
struct APNsHeaderBlocksTests {
    private static func notification(bundle: String = "com.example.application", collapse: String? = "job-1", expiration: Int64? = 1_900_000_000)
        -> APNsNotification
    {
        APNsNotification(
            deviceToken: String(repeating: "ab", count: 32), bundleID: bundle, environment: .production, priority: .immediate,
            expiration: expiration, collapseID: collapse, payload: Array("{}".utf8))
    }

    private static func value(_ name: String, in block: HeaderBlock) -> String? {
        block.headers.first { $0.name == name }?.value
    }

    @Test("pushes of one kind and token share one block; another kind or token gets its own, with its own values")
    func sharedPerKindAndToken() {
        let blocks = APNsHeaderBlocks()
        let first = BearerToken("token-one", scheme: "bearer")
        let block = blocks.block(for: Self.notification(), bearer: first)
        // Equal values in other string objects: the look-up compares contents, not identity.
        let copied = String(decoding: Array("com.example.application".utf8), as: UTF8.self)
        let again = blocks.block(for: Self.notification(bundle: copied), bearer: first)
        #expect(again === block)

        let otherCollapse = blocks.block(for: Self.notification(collapse: "job-2"), bearer: first)
        #expect(otherCollapse !== block)
        #expect(Self.value("apns-collapse-id", in: otherCollapse) == "job-2")
        let otherExpiration = blocks.block(for: Self.notification(expiration: nil), bearer: first)
        #expect(Self.value("apns-expiration", in: otherExpiration) == nil)
        let otherBundle = blocks.block(for: Self.notification(bundle: "com.example.other"), bearer: first)
        #expect(Self.value("apns-topic", in: otherBundle) == "com.example.other")

        let renewed = BearerToken("token-two", scheme: "bearer")
        let afterRenewal = blocks.block(for: Self.notification(), bearer: renewed)
        #expect(afterRenewal !== block)
        #expect(Self.value("authorization", in: afterRenewal) == "bearer token-two")
        // A push still signed with the old token gets a block with the old token.
        #expect(Self.value("authorization", in: blocks.block(for: Self.notification(), bearer: first)) == "bearer token-one")
    }

    @Test("past the bound the table starts again, and every block still matches its push")
    func bounded() {
        let blocks = APNsHeaderBlocks()
        let bearer = BearerToken("token", scheme: "bearer")
        for round in 0..<2 {
            for job in 0..<(APNsHeaderBlocks.kept * 2 + 3) {
                let block = blocks.block(for: Self.notification(collapse: "job-\(job)"), bearer: bearer)
                #expect(Self.value("apns-collapse-id", in: block) == "job-\(job)", "round \(round)")
            }
        }
        let latest = blocks.block(for: Self.notification(collapse: "job-last"), bearer: bearer)
        #expect(blocks.block(for: Self.notification(collapse: "job-last"), bearer: bearer) === latest)
    }
}
