/// `pushd bench <what>`: measurements printed as figures, never asserted in tests.
enum BenchCommand: Subcommand {
    static let name = "bench"
    static let summary = "measure throughput: bench crypto"
    static let help = """
        usage: pushd bench crypto [--seconds S] [--plaintext-bytes N]

          crypto   envelopes per second (1 KB JSON plaintext) on one core and on all cores,
                   beside the raw OpenSSL RSA-2048 OAEP public-encrypt rate on one core
                   (the scheme's physical limit), and their ratio.
        """

    static func run(_ arguments: [String]) async throws(CLIError) {
        guard let what = arguments.first else { throw .usage("bench needs a subject: crypto") }
        let rest = Array(arguments.dropFirst())
        switch what {
        case "crypto": try CryptoBenchmark.run(rest)
        default: throw .usage("unknown bench subject \"\(what)\"")
        }
    }
}
