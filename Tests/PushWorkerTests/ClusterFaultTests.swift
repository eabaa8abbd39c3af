import Foundation
import PushModel
import PushStore
import PushTestSupport
import Testing

/// The node leading the jobs queue stopped, or killed, under two workers on a three-node
/// RabbitMQ cluster (`Deploy/local/services.sh cluster-start`). Runs only in the cluster stage of
/// `Deploy/test.sh`, which sets `PUSHD_CLUSTER_TESTS=1`, `PUSHD_CLUSTER_AMQP_URLS` (every node,
/// comma-separated) and `PUSHD_AMQP_URL` (node 1 only: the fixture's own connection, through
/// which the topology is declared and the jobs published); other runs leave it out with
/// `--skip ClusterFaultTests`.
///
/// The workers get every node's URL, rotated so that the first worker starts on the node
/// that will be lost and has to fail over. Before the several-broker failover is merged the
/// workers understand one URL only: `PUSHD_CLUSTER_SINGLE_URL_WORKERS=1` then gives worker 1
/// the leader's node alone and worker 2 a node that survives, which still checks that the
/// queue survives its leader and that worker 1's unacked jobs, redelivered to worker 2, reach
/// the phones under the same collapse ids.
@Suite("Cluster faults: the jobs queue's leader node stopped or killed mid-run", .serialized,
       .enabled(if: ProcessInfo.processInfo.environment["PUSHD_CLUSTER_TESTS"] == "1"))
struct ClusterFaultTests {
    static let services = BuildProducts.repositoryRoot.appendingPathComponent("Deploy/local/services.sh").path

    static func services(_ arguments: String...) throws -> ChildProcess.Result {
        try ChildProcess.run("/bin/bash", [services] + arguments)
    }

    /// Messages per queue, as the cluster reports them (any running node answers).
    static func queueDepths() throws -> [String: Int] {
        let listing = try services("cluster-rabbitmqctl", "-q", "list_queues", "name", "messages", "--no-table-headers")
        var depths: [String: Int] = [:]
        for line in listing.outputText.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            if fields.count == 2, let count = Int(fields[1]) { depths[String(fields[0])] = count }
        }
        return depths
    }

    /// The nodes' URLs in the order of `PUSHD_RABBITMQ_CLUSTER_NODES` (both from
    /// `services.sh cluster-env`: node 1, 2, 3).
    static func clusterURLs() throws -> [String] {
        let text = ProcessInfo.processInfo.environment["PUSHD_CLUSTER_AMQP_URLS"] ?? ""
        let urls = text.split(separator: ",").map(String.init)
        try #require(urls.count >= 3, "PUSHD_CLUSTER_AMQP_URLS must list the cluster's three nodes, got '\(text)'")
        return urls
    }

    /// How the leader goes: `cluster-stop-node` shuts it down (`rabbitmqctl stop`: connections
    /// closed, maintenance), `cluster-kill-node` crashes it (SIGKILL to its Erlang VM).
    @Test("3,000 deliveries, the jobs queue's leader lost after a third: nothing lost, no duplicate on any phone",
          arguments: ["cluster-stop-node", "cluster-kill-node"])
    func leaderLost(_ fault: String) async throws {
        let urls = try Self.clusterURLs()
        let nodes = (ProcessInfo.processInfo.environment["PUSHD_RABBITMQ_CLUSTER_NODES"] ?? "").split(separator: ",").map(String.init)
        try #require(nodes.count == urls.count, "PUSHD_RABBITMQ_CLUSTER_NODES must name the nodes of PUSHD_CLUSTER_AMQP_URLS, in order")
        try await WorkerFixture.run { fixture in
            let jobsQueue = fixture.topology.jobsQueue
            let leaderQuery = try Self.services("cluster-leader", jobsQueue)
            let leader = leaderQuery.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
            let leaderIndex = try #require(nodes.firstIndex(of: leader), "leader of \(jobsQueue): '\(leader)' \(leaderQuery.errorText)")

            let devices = try await fixture.registerRecipients(750, mix: { _, _ in .normal })
            #expect(devices.count == 3000)
            let others = urls.indices.filter { $0 != leaderIndex }
            let workerURLs: [String]
            if ProcessInfo.processInfo.environment["PUSHD_CLUSTER_SINGLE_URL_WORKERS"] == "1" {
                // Worker 1 loses its only broker (it reconnects to it until it is back); its
                // unacked jobs are redelivered to worker 2 on a surviving node.
                workerURLs = [urls[leaderIndex], urls[others[0]]]
            } else {
                // Worker 1 tries the leader's node first, worker 2 another node first.
                let fromLeader = [leaderIndex] + others
                workerURLs = [fromLeader, others + [leaderIndex]].map { order in order.map { urls[$0] }.joined(separator: ",") }
            }
            let workers = try workerURLs.enumerated().map { index, url in
                try fixture.startWorker("worker-\(index + 1)", environment: ["PUSHD_AMQP_URL": url])
            }

            let recipients = Array(Set(devices.map(\.recipient))).sorted()
            let jobOfRecipient = try await fixture.publishJobs(for: recipients, perJob: 25, label: "cluster")
            // Nothing broken yet: a worker that cannot start (say, one that does not understand a
            // list of URLs) ends the test here rather than after every timeout below.
            let started = try await fixture.waitForAccepted(devices.count / 3, timeout: .seconds(90), workers: workers)
            guard started else {
                Issue.record("deliveries did not start; worker logs:\n\(workers.map { String($0.log.suffix(1500)) }.joined(separator: "\n---\n"))")
                for worker in workers { _ = await worker.terminate(timeout: .seconds(10)) }
                return
            }

            let stopped = try Self.services(fault, leader)
            #expect(stopped.status == 0, "\(fault) \(leader): \(stopped.errorText)")
            var stillRestarting = true
            defer {
                // Leave the cluster whole for the next run, whatever happened above.
                if stillRestarting { _ = try? Self.services("cluster-start-node", leader) }
            }
            // After a crash the survivors elect a leader once their election timeout passes.
            var newLeader = ""
            let elected = try await waitUntil(timeout: .seconds(60), every: .milliseconds(500)) {
                newLeader = try Self.services("cluster-leader", jobsQueue).outputText.trimmingCharacters(in: .whitespacesAndNewlines)
                return !newLeader.isEmpty && newLeader != leader
            }
            #expect(elected, "\(jobsQueue) elected a new leader (was \(leader), now '\(newLeader)')")

            // Everything arrives: a cheap counter first, then the tokens.
            let tokens = Set(devices.map(\.token))
            _ = try await fixture.waitForAccepted(devices.count, timeout: .seconds(240))
            let all = try await waitUntil(timeout: .seconds(60), every: .seconds(1)) {
                Set(try await fixture.received().map(\.token)).isSuperset(of: tokens)
            }
            let received = try await fixture.received()
            let missing = tokens.subtracting(received.map(\.token))
            let logs = workers.map { String($0.log.suffix(2000)) }.joined(separator: "\n---\n")
            #expect(all, "\(missing.count) devices never got their push after \(fault) \(leader)\n\(logs)")

            // On a phone a repeat with the same collapse id replaces the notification: what the
            // user sees twice is a second push with another collapse id. There must be none.
            let byToken = Dictionary(grouping: received, by: \.token)
            var visibleDuplicates = 0
            var repeats = 0
            for device in devices {
                let pushes = byToken[device.token] ?? []
                repeats += max(0, pushes.count - 1)
                let collapseIDs = Set(pushes.map { $0.collapseID ?? "" })
                visibleDuplicates += max(0, collapseIDs.count - 1)
                for push in pushes {
                    #expect(push.collapseID == jobOfRecipient[device.recipient], "a repeat keeps its job's collapse id")
                }
            }
            #expect(visibleDuplicates == 0, "\(visibleDuplicates) duplicates visible on phones (\(repeats) redelivered repeats in all)")
            for (index, worker) in workers.enumerated() {
                #expect(worker.isRunning, "worker \(index + 1) kept running through the node loss")
            }

            // Nothing left behind either: every job acked, none dead-lettered.
            let settled = try await waitUntil(timeout: .seconds(30), every: .milliseconds(500)) {
                let depths = try Self.queueDepths()
                return depths[jobsQueue] == 0 && depths[fixture.topology.deadQueue] == 0
            }
            let left = try Self.queueDepths().filter { $0.key.hasPrefix(fixture.prefix) && $0.value > 0 }
            #expect(settled, "messages left in queues after the run: \(left)")

            stillRestarting = false
            let restarted = try Self.services("cluster-start-node", leader)
            #expect(restarted.status == 0, "restarting \(leader): \(restarted.errorText)")
            for worker in workers {
                #expect(await worker.terminate(timeout: .seconds(30)) == 0)
            }
        }
    }
}
