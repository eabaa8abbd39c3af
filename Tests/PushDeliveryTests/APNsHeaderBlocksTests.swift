import Foundation
import Testing

@testable import PushDelivery

/// The table of shared APNs header blocks: one block per kind of push and provider token,
/// and never a block that says something other than the push it is used for.
@Suite("APNs shared header blocks")
struct APNsHeaderBlocksTests {
    private static func notification(
        bundle: String = "com.example.application", pushType: APNsPushType = .alert, priority: APNsNotification.Priority = .immediate,
        collapse: String? = "job-1", expiration: Int64? = 1_900_000_000
    ) -> APNsNotification {
        APNsNotification(
            deviceToken: String(repeating: "ab", count: 32), bundleID: bundle, environment: .production, pushType: pushType,
            priority: priority, expiration: expiration, collapseID: collapse, payload: Array("{}".utf8))
    }

    private static func value(_ name: String, in block: HeaderBlock) -> String? {
        block.headers.first { $0.name == name }?.value
    }

    @Test("pushes of one kind and token share one block; another kind gets its own, with its own values")
    func sharedPerKind() {
        let blocks = APNsHeaderBlocks()
        let bearer = BearerToken("token-one", scheme: "bearer")
        let block = blocks.block(for: Self.notification(), bearer: bearer)
        // Equal values in other string objects: the look-up compares contents, not identity.
        let copied = String(decoding: Array("com.example.application".utf8), as: UTF8.self)
        #expect(blocks.block(for: Self.notification(bundle: copied), bearer: bearer) === block)

        let otherCollapse = blocks.block(for: Self.notification(collapse: "job-2"), bearer: bearer)
        #expect(otherCollapse !== block)
        #expect(Self.value("apns-collapse-id", in: otherCollapse) == "job-2")
        let otherExpiration = blocks.block(for: Self.notification(expiration: nil), bearer: bearer)
        #expect(otherExpiration !== block)
        #expect(Self.value("apns-expiration", in: otherExpiration) == nil)
        let otherBundle = blocks.block(for: Self.notification(bundle: "com.example.other"), bearer: bearer)
        #expect(Self.value("apns-topic", in: otherBundle) == "com.example.other")
        let voip = blocks.block(for: Self.notification(pushType: .voip), bearer: bearer)
        #expect(voip !== block)
        #expect(Self.value("apns-topic", in: voip) == "com.example.application.voip")
        #expect(Self.value("apns-push-type", in: voip) == "voip")
        let background = blocks.block(for: Self.notification(pushType: .background, priority: .conservesPower), bearer: bearer)
        #expect(Self.value("apns-push-type", in: background) == "background")
        #expect(Self.value("apns-priority", in: background) == "5")
        let lowPriority = blocks.block(for: Self.notification(priority: .conservesPower), bearer: bearer)
        #expect(lowPriority !== block)
        #expect(Self.value("apns-priority", in: lowPriority) == "5")
    }

    @Test("after a renewal, pushes with the old and the new token interleave and each keeps its own block")
    func renewalInterleaves() {
        let blocks = APNsHeaderBlocks()
        let old = BearerToken("token-one", scheme: "bearer")
        let renewed = BearerToken("token-two", scheme: "bearer")
        let oldBlock = blocks.block(for: Self.notification(), bearer: old)
        let newBlock = blocks.block(for: Self.notification(), bearer: renewed)
        #expect(newBlock !== oldBlock)
        #expect(Self.value("authorization", in: newBlock) == "bearer token-two")
        #expect(Self.value("authorization", in: oldBlock) == "bearer token-one")
        for _ in 0..<3 {
            #expect(blocks.block(for: Self.notification(), bearer: old) === oldBlock)
            #expect(blocks.block(for: Self.notification(), bearer: renewed) === newBlock)
        }
        // A third token retires the first: a push still signed with it gets a new block,
        // still with its own token.
        _ = blocks.block(for: Self.notification(), bearer: BearerToken("token-three", scheme: "bearer"))
        let retired = blocks.block(for: Self.notification(), bearer: old)
        #expect(retired !== oldBlock)
        #expect(Self.value("authorization", in: retired) == "bearer token-one")
    }

    @Test("past the bound a token's table starts again, and every block still matches its push")
    func bounded() {
        let blocks = APNsHeaderBlocks()
        let bearer = BearerToken("token", scheme: "bearer")
        let first = blocks.block(for: Self.notification(collapse: "job-0"), bearer: bearer)
        for job in 1..<APNsHeaderBlocks.kept {
            _ = blocks.block(for: Self.notification(collapse: "job-\(job)"), bearer: bearer)
        }
        #expect(blocks.count == APNsHeaderBlocks.kept)
        #expect(blocks.block(for: Self.notification(collapse: "job-0"), bearer: bearer) === first)
        _ = blocks.block(for: Self.notification(collapse: "job-\(APNsHeaderBlocks.kept)"), bearer: bearer)
        #expect(blocks.count == 1)
        let rebuilt = blocks.block(for: Self.notification(collapse: "job-0"), bearer: bearer)
        #expect(rebuilt !== first)
        #expect(Self.value("apns-collapse-id", in: rebuilt) == "job-0")
        for job in 0..<(APNsHeaderBlocks.kept * 3) {
            let block = blocks.block(for: Self.notification(collapse: "job-\(job)"), bearer: bearer)
            #expect(Self.value("apns-collapse-id", in: block) == "job-\(job)")
            #expect(blocks.count <= APNsHeaderBlocks.kept)
        }
    }
}
