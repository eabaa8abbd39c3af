import Foundation
import PushModel
import PushQueue
@testable import PushWorker

/// Jobs and devices for the pure worker tests: no servers.
enum Fixtures {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func jobJSON(_ extra: String = "", retry: String? = nil) -> [UInt8] {
        var fields = [
            #""version":1"#, #""job_id":"job-1""#, #""app":{"ios_bundle_id":"com.example.app","fcm_project_id":"example"}"#,
            #""recipients":{"recipient_ids":["user-1"]}"#, #""fallback":{"title":"t","message":"m"}"#,
        ]
        if !extra.isEmpty { fields.append(extra) }
        if let retry { fields.append(#""retry":"# + retry) }
        return Array(("{" + fields.joined(separator: ",") + "}").utf8)
    }

    /// Accepted as from the retries queue, where a worker's retry state is trusted (a job
    /// without it is read the same from either queue).
    static func accepted(_ body: [UInt8] = jobJSON(), publishedAt: UInt64? = nil) throws -> AcceptedJob {
        guard case .accepted(let job) = JobIntake().accept(body, publishedAt: publishedAt, now: now, source: .retries) else {
            throw FixtureError.refused
        }
        return job
    }

    enum FixtureError: Error { case refused }

    static func device(_ id: Int64, platform: Platform = .ios) -> Device {
        Device(
            id: id, recipientID: "user-1", platform: platform, appID: platform == .ios ? "com.example.app" : "example",
            environment: .production, token: "token-\(id)", publicKey: nil, keyID: "kid-\(id)", keyRegisteredAt: nil,
            tokenRegisteredAt: now, appVersion: nil)
    }

    static let tiers: [Topology.RetryTier] = [
        .init(name: "5s", delay: .seconds(5)), .init(name: "30s", delay: .seconds(30)), .init(name: "2m", delay: .seconds(120)),
    ]

    static func policy(maximumAttempts: Int = 4, maximumAge: Duration = .seconds(3600)) -> RetryPolicy {
        RetryPolicy(maximumAttempts: maximumAttempts, maximumAge: maximumAge, tiers: tiers)
    }
}
