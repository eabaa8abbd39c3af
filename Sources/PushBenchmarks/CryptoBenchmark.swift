import Dispatch
import Foundation
import PushCommandLine
import PushCrypto
import Synchronization

/// Envelope sealing against the bare RSA operation it cannot avoid, in one run.
enum CryptoBenchmark {
    static func run(_ arguments: [String]) throws(CLIError) {
        let parsed = try ParsedArguments(arguments, options: ["seconds", "plaintext-bytes"])
        let seconds = try parsed.double("seconds", default: 3)
        let plaintextBytes = try parsed.integer("plaintext-bytes", default: 1024, minimum: 0)
        let cores = ProcessInfo.processInfo.activeProcessorCount

        let key: DevicePublicKey
        do { key = try DevicePrivateKey.generate().publicKey } catch { throw .failure("\(error)") }
        let plaintext = Array(samplePlaintext(bytes: plaintextBytes).utf8)

        // Warm up (page in code, fill the context pools) before measuring.
        _ = measure(seconds: 0.3, threads: 1) { sealOnce(plaintext, key) }
        let (rawOneCore, envelopesOneCore) = try measureRawAndEnvelope(key: key, seconds: seconds) { sealOnce(plaintext, key) }
        let binaryOneCore = measure(seconds: seconds, threads: 1) { (try? EnvelopeSealer.seal(plaintext, for: key)) != nil }
        let envelopesAllCores = measure(seconds: seconds, threads: cores) { sealOnce(plaintext, key) }
        let ratio = envelopesOneCore / rawOneCore

        StandardStreams.write(line: "bench crypto: RSA-2048, \(plaintext.count)-byte JSON plaintext, \(seconds) s per figure, \(cores) cores")
        StandardStreams.write(line: String(format: "  raw RSA-OAEP-SHA1 public encrypt, 1 core : %10.0f ops/s", rawOneCore))
        StandardStreams.write(line: String(format: "  envelopes sealed (JSON as the worker embeds it), 1 core: %10.0f envelopes/s", envelopesOneCore))
        StandardStreams.write(line: String(format: "  envelopes sealed (binary parts), 1 core  : %10.0f envelopes/s", binaryOneCore))
        StandardStreams.write(line: String(format: "  envelopes sealed (JSON), %d cores        : %10.0f envelopes/s", cores, envelopesAllCores))
        StandardStreams.write(line: String(format: "  ratio envelope / raw RSA (1 core)         : %10.3f (target >= 0.9)", ratio))
        StandardStreams.write(line: String(format: "  all-core scaling                          : %10.2fx", envelopesAllCores / envelopesOneCore))
        let (keys, kibPerKey) = keyCacheCost(key, plaintext: plaintext)
        StandardStreams.write(line: String(
            format: "  key cache: %d distinct keys, each sealed for once: %.1f KiB resident per key", keys, kibPerKey))
        let parsing = keyParsingCost(key, plaintext: plaintext)
        StandardStreams.write(line: String(
            format: "  a key not in the cache, iOS PKCS#1, parsed and first sealed for: %.0f µs checked in full, %.1f µs recorded as checked (%.0f envelopes against %.1f)",
            parsing.pkcs1Checked, parsing.pkcs1Recorded, parsing.pkcs1Checked * envelopesOneCore / 1e6, parsing.pkcs1Recorded * envelopesOneCore / 1e6))
        StandardStreams.write(line: String(
            format: "  a key not in the cache, Android SPKI, parsed and first sealed for: %.0f µs checked in full, %.1f µs recorded as checked (%.0f envelopes against %.1f)",
            parsing.spkiChecked, parsing.spkiRecorded, parsing.spkiChecked * envelopesOneCore / 1e6, parsing.spkiRecorded * envelopesOneCore / 1e6))
    }

    /// What a worker's `PublicKeyCache` costs per device key it holds (the parsed key, its
    /// pooled OAEP context, the registered text): resident memory before and after filling
    /// a cache with `count` keys, each used once. The texts differ only in trailing
    /// whitespace, so one generated key serves (each text is still parsed on its own).
    private static func keyCacheCost(_ key: DevicePublicKey, plaintext: [UInt8], count: Int = 8192) -> (Int, Double) {
        let pem = key.pem
        let cache = PublicKeyCache(capacity: count)
        let before = residentKiB()
        for index in 0..<count {
            var text = pem
            for bit in 0..<13 { text += index & (1 << bit) == 0 ? " " : "\n" }
            // Recorded as checked: the full check (5 ms a key, 40 s for these) adds no memory.
            guard let parsed = try? cache.key(for: text, checkedBefore: true) else { continue }
            _ = sealOnce(plaintext, parsed)
        }
        let after = residentKiB()
        return (cache.count, Double(after - before) / Double(max(1, cache.count)))
    }

    /// This process's resident memory now (`VmRSS`), in KiB.
    private static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// The all-core envelope rate alone, for `bench pipeline`'s crypto ceiling.
    static func allCoreEnvelopeRate(seconds: Double) -> Double {
        guard let key = try? DevicePrivateKey.generate().publicKey else { return 0 }
        let plaintext = Array(samplePlaintext(bytes: 1024).utf8)
        return measure(seconds: seconds, threads: ProcessInfo.processInfo.activeProcessorCount) { sealOnce(plaintext, key) }
    }

    /// One envelope's cost on one core, for `bench pipeline`'s CPU-per-delivery yardstick:
    /// the CPU this thread spent per envelope (its own CPU clock), and the elapsed time per
    /// envelope beside it. The workers' side of the ratio is their CPU clock, so the envelope
    /// is read in the same unit: elapsed time also counts the moments another process held
    /// this core (the emulator finishing a drain, the broker), which read as a dearer envelope
    /// and so as a better ratio than the worker earned. Nil if no envelope was sealed.
    static func oneCoreEnvelopeCost(seconds: Double) -> (cpuMicroseconds: Double, elapsedMicroseconds: Double)? {
        guard let key = try? DevicePrivateKey.generate().publicKey else { return nil }
        let plaintext = Array(samplePlaintext(bytes: 1024).utf8)
        _ = loop(until: DispatchTime.now().uptimeNanoseconds + 300_000_000) { sealOnce(plaintext, key) }
        let start = DispatchTime.now().uptimeNanoseconds
        guard let cpuBefore = WorkerUsage.cpuClockSeconds(CLOCK_THREAD_CPUTIME_ID) else { return nil }
        let done = loop(until: start + UInt64(seconds * 1e9)) { sealOnce(plaintext, key) }
        guard let cpuAfter = WorkerUsage.cpuClockSeconds(CLOCK_THREAD_CPUTIME_ID), done > 0 else { return nil }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        return ((cpuAfter - cpuBefore) * 1e6 / Double(done), Double(elapsed) / 1e3 / Double(done))
    }

    /// A notification-shaped JSON object padded to about `bytes` bytes.
    static func samplePlaintext(bytes: Int) -> String {
        let head = #"{"title":"Anna Svensson","message":"Can we move the interview to 3pm?","body":{"sender":{"id":"c-1","displayName":"Acme","avatarUrl":"https://example.com/a.png"},"note":""#
        let tail = #""},"experienceId":"@acme/app","scopeKey":"@acme/app"}"#
        let padding = max(0, bytes - head.utf8.count - tail.utf8.count)
        return head + String(repeating: "x", count: padding) + tail
    }

    /// One envelope in the form the worker seals it: its JSON as a JSON string value, ready
    /// to splice into a push payload.
    static func sealOnce(_ plaintext: [UInt8], _ key: DevicePublicKey) -> Bool {
        guard let quoted = try? EnvelopeSealer.sealQuotedJSON(plaintext, for: key) else { return false }
        return !quoted.bytes.isEmpty
    }

    /// The bare RSA operation and the envelope on this thread, in alternating slices of at
    /// most 0.25 s until each has run `seconds`; returns both rates. Alternating, rather than
    /// one after the other, means a change in what else the machine runs (a shared VM) weighs
    /// on both alike, so their ratio, the figure the envelope is judged by, stays meaningful.
    private static func measureRawAndEnvelope(
        key: DevicePublicKey, seconds: Double, _ envelope: () -> Bool
    ) throws(CLIError) -> (raw: Double, envelopes: Double) {
        let baseline: RSAOAEPBaseline
        do { baseline = try RSAOAEPBaseline(key: key) } catch { throw .failure("\(error)") }
        let total = UInt64(seconds * 1e9)
        let slice = min(total, 250_000_000)
        var raw = (done: 0, nanoseconds: UInt64(0))
        var envelopes = (done: 0, nanoseconds: UInt64(0))
        func run(_ tally: inout (done: Int, nanoseconds: UInt64), _ operation: () -> Bool) {
            guard tally.nanoseconds < total else { return }
            let start = DispatchTime.now().uptimeNanoseconds
            tally.done += loop(until: start + min(slice, total - tally.nanoseconds), operation)
            tally.nanoseconds += DispatchTime.now().uptimeNanoseconds - start
        }
        while raw.nanoseconds < total || envelopes.nanoseconds < total {
            run(&raw) { baseline.encryptOnce() }
            run(&envelopes, envelope)
        }
        return (Double(raw.done) / (Double(raw.nanoseconds) / 1e9), Double(envelopes.done) / (Double(envelopes.nanoseconds) / 1e9))
    }

    /// Runs `operation` in a tight loop on `threads` OS threads for `seconds`; returns the
    /// total rate. Blocking threads, not tasks: this is a CPU measurement outside any pool.
    private static func measure(seconds: Double, threads: Int, _ operation: @escaping @Sendable () -> Bool) -> Double {
        let total = Atomic<Int>(0)
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            total.add(loop(until: deadline, operation), ordering: .relaxed)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Double(total.load(ordering: .relaxed)) / elapsed
    }

    /// Calls `operation` until `deadline`, checking the clock every 16 calls; returns how
    /// many calls succeeded.
    private static func loop(until deadline: UInt64, _ operation: () -> Bool) -> Int {
        var done = 0
        while DispatchTime.now().uptimeNanoseconds < deadline {
            for _ in 0..<16 where operation() { done += 1 }
        }
        return done
    }
}
