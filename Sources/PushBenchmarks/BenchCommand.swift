import PushCommandLine

/// `pushd bench <what>`: measurements printed as figures, never asserted in tests. The
/// benchmarks live in their own module; the `pushd` executable only lists this command.
public enum BenchCommand: Subcommand {
    public static let name = "bench"
    public static let summary = "measure throughput: bench crypto | store | queue | apns | pipeline"
    public static let help = """
        usage: pushd bench crypto [--seconds S] [--plaintext-bytes N]

          crypto   envelopes per second (1 KB JSON plaintext) on one core and on all cores,
                   beside the raw OpenSSL RSA-2048 OAEP public-encrypt rate on one core
                   (the scheme's physical limit), and their ratio.

        usage: pushd bench store [--devices N] [--seconds S] [--concurrency C] [--database-url URL]

          store    devices resolved per second from PostgreSQL for batches of 1, 100 and 1,000
                   recipients (after `pushd migrate`), beside pgbench -S on the same server.
                   Seeds N devices (default 50,000) under app ids unique to the run and deletes
                   them afterwards; C connections (default 4); S seconds per figure (default 3).

        usage: pushd bench queue [--messages N] [--size BYTES] [--batch B] [--in-flight K]
                                 [--prefetch P] [--amqp-url URL]

          queue    RabbitMQ messages per second: publish with confirms (one at a time, and
                   pipelined), consume with manual acks, on a scratch quorum queue it deletes.

        usage: pushd bench apns --url URL --ca-file CA --p8 KEY [--team-id T] [--key-id K]
                                [--bundle B] [--requests N] [--concurrency C] [--connections K]
                                [--payload-bytes N]

          apns     pushes per second and p50/p99 latency of the APNs client against the local
                   emulator, beside the emulator's own ceiling measured by h2load in the same
                   run, and their ratio; and the client's CPU per push (this process). N pads
                   the payload to about N bytes (a worker's is about 2,000). `bash
                   Deploy/bench.sh apns` starts an emulator for it.

        usage: pushd bench pipeline --emulator-url URL --emulator-admin URL --ca-file CA
                                    --credentials DIR [--deliveries N] [--backlog N] [--row-drains N]
                                    [--mode urgent-under-bulk [--urgent-jobs N]]
                                    [--peer-python PY --peer-script aioapns_peer.py] [--peer-requests N]
                                    [--only backlog [--rounds N] [--baseline OTHER_PUSHD] [--workers N]]
                                    [--only latency [--rate N] [--recipients N]] [--only start-up] [--platforms both|ios]

          pipeline end to end: deliveries/s from queued jobs to pushes accepted, with one and
                   two workers; publish-to-acceptance p50/p99 at half the maximum rate (jobs
                   of 50 recipients, 100 pushes; 50 with --platforms ios, jobs for the iOS app
                   only), with a job's first and last push, and for one-recipient jobs at 100 a
                   second; a
                   worker's peak memory draining a backlog; the emulator and crypto ceilings
                   and our rate as a ratio of the lower; the workers' CPU per delivery (their
                   process CPU clocks) beside one core's CPU per envelope (its thread's CPU
                   clock), measured just before and after each drain, and their ratio, and
                   the emulator's CPU per push (it shares these cores). Each throughput row
                   and the backlog run --row-drains drains (3 by default) and report the one
                   with the median ratio (the upper middle for an even count); the
                   aioapns peer sender (Python, no encryption) on the same emulator. `bash Deploy/bench.sh pipeline`. `--only backlog` runs just the
                   backlog drain and the crypto yardstick (for profiling), --rounds times;
                   with --baseline, drains alternate between this worker and another pushd's
                   (an older build, say), with the median CPU per delivery of each;
                   --workers N drains it with N workers at once (1 by default).
                   `--only latency` runs just a latency measurement, at --rate deliveries/s
                   (default: half of what two workers drain) with --recipients per job.
                   `--only start-up` runs a one-worker drain of --deliveries, then starts
                   one worker three times on empty queues: its CPU until it consumes and goes
                   quiet, and what its first job costs beyond that job's deliveries at the
                   drain's CPU per delivery (the full run does this too, after the backlog,
                   and shows the start-up's share of the two-worker row).
                   --mode urgent-under-bulk: p50/p99 publish → accepted of urgent jobs (one
                   recipient each, 20 ms apart) on an idle cluster, then while two workers
                   drain a bulk-lane backlog of --backlog deliveries (default 100,000).
        """

    public static func run(_ arguments: [String]) async throws(CLIError) {
        guard let what = arguments.first else { throw .usage("bench needs a subject: crypto") }
        let rest = Array(arguments.dropFirst())
        switch what {
        case "crypto": try CryptoBenchmark.run(rest)
        case "store": try await StoreBenchmark.run(rest)
        case "queue": try await QueueBenchmark.run(rest)
        case "apns": try await APNsBenchmark.run(rest)
        case "pipeline": try await PipelineBenchmark.run(rest)
        default: throw .usage("unknown bench subject \"\(what)\"")
        }
    }
}
