import Foundation
import PushModel
@testable import PushProducer
import PushQueue
import PushTestSupport
import Testing

/// What producers and the one-shot commands refuse before they touch a server, so that they
/// agree with the workers: the job body's size, and an unverified connection to a remote
/// PostgreSQL.
@Suite("Producer and command-line limits")
struct ProducerCommandLimitsTests {
    @Test("a job body over 2 MiB, which workers dead-letter unread, is refused by the producer")
    func oversizeJobRefused() throws {
        let topology = Topology(prefix: "limits", retryTiers: [])
        func job(paddedTo bytes: Int) -> [UInt8] {
            let head = #"{"version":1,"job_id":"big","app":{"ios_bundle_id":"com.example.app"},"recipients":{"recipient_ids":["u"]},"fallback":{"title":"t","message":"m"},"x_padding":""#
            let tail = #""}"#
            return Array((head + String(repeating: "a", count: bytes - head.utf8.count - tail.utf8.count) + tail).utf8)
        }
        let atLimit = job(paddedTo: NotificationJob.maximumBodyBytes)
        #expect(atLimit.count == NotificationJob.maximumBodyBytes)
        _ = try JobPublisher.request(json: atLimit, topology: topology)
        #expect {
            _ = try JobPublisher.request(json: job(paddedTo: NotificationJob.maximumBodyBytes + 1), topology: topology)
        } throws: { error in
            "\(error)".contains("2097153 bytes")
        }
    }

    @Test("pushd migrate refuses an unverified connection to a remote PostgreSQL, as the worker does, before connecting")
    func migrateRefusesInsecureTransport() throws {
        for mode in ["prefer", "require"] {
            let result = try ChildProcess.run(
                BuildProducts.pushd, ["migrate", "--database-url", "postgresql://u:s3cret@db.invalid/pushd?sslmode=\(mode)"],
                environment: ["PATH": "/usr/bin:/bin"])
            #expect(result.status != 0)
            #expect(result.errorText.contains("sslmode=\(mode)") && result.errorText.contains("verify-full"), "\(result.errorText)")
            #expect(!result.errorText.contains("s3cret"))
        }
    }
}
