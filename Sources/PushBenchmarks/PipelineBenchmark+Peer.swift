import Foundation

extension PipelineRun {
    /// The peer sender's rate: Python `aioapns` (PyPI) pushing the same alert without
    /// encryption to the same emulator (`Deploy/bench/aioapns_peer.py`), so the whole worker
    /// can be set against a common sender in the same run.
    func aioapnsRate(python: String, script: String, requests: Int) async throws -> Double {
        try await resetEmulator()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            script, "--url", setup.emulatorURL, "--ca-file", setup.caFile,
            "--p8", setup.credentials.appendingPathComponent("AuthKey_KEYID12345.p8").path,
            "--bundle", Self.bundle, "--requests", String(requests),
        ]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Both pipes are drained before waiting, so a chatty peer cannot block on a full pipe.
        async let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let diagnostics = await errorText
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let line = text.split(separator: "\n").last,
              let figures = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let rate = figures["rate"] as? Double, let delivered = figures["delivered"] as? Int
        else { throw BenchmarkError("the aioapns peer failed:\n\(text.suffix(400))\(diagnostics.suffix(1200))") }
        guard delivered == requests else { throw BenchmarkError("the aioapns peer delivered \(delivered) of \(requests)") }
        return rate
    }
}
