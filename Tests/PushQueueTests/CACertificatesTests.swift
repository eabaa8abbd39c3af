import Foundation
@testable import PushQueue
import PushTestSupport
import Testing

/// A CA file is parsed once per process for every AMQP TLS connection that trusts it, and
/// again only once it changes (the TLS suite of `PrivateNodeTests` connects through it).
@Suite("CA certificates for AMQP over TLS")
struct CACertificatesTests {
    /// A self-signed CA certificate in PEM, made by the openssl command line.
    func certificate(named name: String, in directory: URL) throws -> Data {
        let key = directory.appendingPathComponent("\(name).key").path
        let pem = directory.appendingPathComponent("\(name).pem").path
        let made = try ChildProcess.run("openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", pem,
            "-days", "1", "-subj", "/CN=pushd \(name)",
        ])
        try #require(made.status == 0, "openssl req failed: \(made.errorText)")
        return try Data(contentsOf: URL(fileURLWithPath: pem))
    }

    @Test("one file is parsed once while it is unchanged, and again once it is replaced")
    func sharedUntilChanged() throws {
        let directory = try BuildProducts.temporaryDirectory("ca-certificates")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ca.pem")
        try certificate(named: "first CA", in: directory).write(to: file, options: .atomic)
        let first = try CACertificates.shared(path: file.path)
        #expect(try CACertificates.shared(path: file.path) === first)
        // A rotated CA, written as deployments write files (a new file renamed over the old).
        try certificate(named: "second CA", in: directory).write(to: file, options: .atomic)
        let second = try CACertificates.shared(path: file.path)
        #expect(second !== first)
        #expect(try CACertificates.shared(path: file.path) === second)
    }

    @Test("a missing file or one without a certificate is refused with its path and why")
    func unusableFiles() throws {
        let directory = try BuildProducts.temporaryDirectory("ca-certificates")
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("missing.pem").path
        #expect { try CACertificates.shared(path: missing) } throws: { error in
            "\(error)" == "cannot load CA certificates from \(missing): cannot read it"
        }
        let empty = directory.appendingPathComponent("empty.pem")
        try Data("not a certificate\n".utf8).write(to: empty)
        #expect { try CACertificates.shared(path: empty.path) } throws: { error in
            "\(error)".hasSuffix("no PEM certificate in it")
        }
    }
}
