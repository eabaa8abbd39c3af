import COpenSSL
import Foundation
@testable import PushTLS
import PushTestSupport
import Testing

/// A CA file, or the system's store, is parsed once per process for every TLS client that
/// trusts it (AMQP connections and HTTP/2 contexts), and again only once it changes (the TLS
/// suite of `PrivateNodeTests` and the HTTP/2 tests connect through it).
@Suite("CA certificates shared by a process's TLS clients")
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
        // Rewritten in place (the same inode), as `cp` over it would: read again too.
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: try certificate(named: "third CA", in: directory))
        try handle.close()
        let third = try CACertificates.shared(path: file.path)
        #expect(third !== second)
        #expect(try CACertificates.shared(path: file.path) === third)
    }

    @Test("a missing file, a directory, one without a certificate or with a damaged one: refused with its path and why")
    func unusableFiles() throws {
        let directory = try BuildProducts.temporaryDirectory("ca-certificates")
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("missing.pem").path
        #expect { try CACertificates.shared(path: missing) } throws: { error in
            "\(error)" == "cannot load CA certificates from \(missing): No such file or directory"
        }
        #expect { try CACertificates.shared(path: directory.path) } throws: { error in
            "\(error)" == "cannot load CA certificates from \(directory.path): Is a directory"
        }
        let empty = directory.appendingPathComponent("empty.pem")
        try Data("not a certificate\n".utf8).write(to: empty)
        #expect { try CACertificates.shared(path: empty.path) } throws: { error in
            "\(error)" == "cannot load CA certificates from \(empty.path): no PEM certificate in it"
        }
        // A good certificate, then one whose base64 is cut short: the file is refused, with
        // OpenSSL's reason, rather than trusted in part.
        let good = try certificate(named: "good CA", in: directory)
        let text = String(decoding: good, as: UTF8.self)
        let damaged = directory.appendingPathComponent("damaged.pem")
        try Data((text + text.replacingOccurrences(of: "\n-----END", with: "AAA\n-----END")).utf8).write(to: damaged)
        #expect { try CACertificates.shared(path: damaged.path) } throws: { error in
            let message = "\(error)"
            return message.hasPrefix("cannot load CA certificates from \(damaged.path): error:") && !message.hasSuffix("no PEM certificate in it")
        }
        // Made usable, the same path is read then: a refusal is not remembered.
        try good.write(to: damaged, options: .atomic)
        #expect(throws: Never.self) { try CACertificates.shared(path: damaged.path) }
    }

    /// How many certificates (and CRLs) a store holds.
    func objects(in certificates: CACertificates) -> Int32 {
        OPENSSL_sk_num(X509_STORE_get0_objects(certificates.store))
    }

    @Test("the system's store: the file and directories OpenSSL's variables name, shared while the file is unchanged")
    func systemStore() throws {
        let directory = try BuildProducts.temporaryDirectory("ca-certificates")
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("bundle.pem")
        let hashed = directory.appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: hashed, withIntermediateDirectories: true)
        let first = try certificate(named: "first CA", in: directory)
        try (first + certificate(named: "second CA", in: directory)).write(to: bundle, options: .atomic)
        let environment = ["SSL_CERT_FILE": bundle.path, "SSL_CERT_DIR": hashed.path]
        let system = try CACertificates.system(environment: environment)
        #expect(objects(in: system) == 2)
        #expect(try CACertificates.system(environment: environment) === system)
        // The bundle named as a CA file of its own is another configuration (no directory).
        #expect(try CACertificates.shared(path: bundle.path) !== system)
        // An updated bundle (update-ca-certificates writes a new one) is read again.
        try first.write(to: bundle, options: .atomic)
        let updated = try CACertificates.system(environment: environment)
        #expect(updated !== system && objects(in: updated) == 1)
        // A bundle someone named that is not there is refused, not left to fail every handshake.
        let missing = directory.appendingPathComponent("missing.pem").path
        #expect { try CACertificates.system(environment: ["SSL_CERT_FILE": missing]) } throws: { error in
            "\(error)" == "cannot load CA certificates from \(missing): No such file or directory"
        }
        // And the machine's own, as the workers use it: one store however often it is asked for.
        #expect(try CACertificates.system(environment: [:]) === CACertificates.system(environment: [:]))
    }
}
