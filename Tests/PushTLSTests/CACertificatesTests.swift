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
    @Test("one file is parsed once while it is unchanged, and again once it is replaced")
    func sharedUntilChanged() throws {
        let directory = try BuildProducts.temporaryDirectory("ca-certificates")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ca.pem")
        try TestKeyMaterial.certificateAuthority(named: "first CA", in: directory).write(to: file, options: .atomic)
        let first = try CACertificates.shared(path: file.path)
        #expect(try CACertificates.shared(path: file.path) === first)
        // A rotated CA, written as deployments write files (a new file renamed over the old).
        try TestKeyMaterial.certificateAuthority(named: "second CA", in: directory).write(to: file, options: .atomic)
        let second = try CACertificates.shared(path: file.path)
        #expect(second !== first)
        #expect(try CACertificates.shared(path: file.path) === second)
        // Rewritten in place (the same inode), as `cp` over it would: read again too.
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: try TestKeyMaterial.certificateAuthority(named: "third CA", in: directory))
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
        let good = try TestKeyMaterial.certificateAuthority(named: "good CA", in: directory)
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
        let first = try TestKeyMaterial.certificateAuthority(named: "first CA", in: directory)
        try (first + TestKeyMaterial.certificateAuthority(named: "second CA", in: directory)).write(to: bundle, options: .atomic)
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

    /// Whether `certificate` verifies against the store, as a TLS handshake's chain check does.
    func verifies(_ certificate: Data, against certificates: CACertificates) throws -> Bool {
        let parsed = certificate.withUnsafeBytes { bytes -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        let x509 = try #require(parsed)
        defer { X509_free(x509) }
        let context = try #require(X509_STORE_CTX_new())
        defer { X509_STORE_CTX_free(context) }
        try #require(X509_STORE_CTX_init(context, certificates.store, x509, nil) == 1)
        return X509_verify_cert(context) == 1
    }

    @Test("the system's directories: a CA found only by its hash, in the second of two, verifies; the defaults stand in for unset variables")
    func systemDirectories() throws {
        let directory = try BuildProducts.temporaryDirectory("ca-certificates")
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("bundle.pem")
        try TestKeyMaterial.certificateAuthority(named: "bundle CA", in: directory).write(to: bundle, options: .atomic)
        let (empty, hashed) = (directory.appendingPathComponent("empty"), directory.appendingPathComponent("hashed"))
        for made in [empty, hashed] { try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true) }
        let directoryCA = try TestKeyMaterial.certificateAuthority(named: "directory CA", in: directory)
        let hash = try ChildProcess.run("openssl", ["x509", "-hash", "-noout", "-in", directory.appendingPathComponent("directory CA.pem").path])
        try #require(hash.status == 0, "openssl x509 -hash failed: \(hash.errorText)")
        try directoryCA.write(to: hashed.appendingPathComponent(hash.outputText.trimmingCharacters(in: .whitespacesAndNewlines) + ".0"))
        try TestKeyMaterial.certificateAuthority(named: "stranger CA", in: directory)
        let fromBundle = try TestKeyMaterial.certificate(named: "bundle leaf", signedBy: "bundle CA", in: directory)
        let fromDirectory = try TestKeyMaterial.certificate(named: "directory leaf", signedBy: "directory CA", in: directory)
        let fromStranger = try TestKeyMaterial.certificate(named: "stranger leaf", signedBy: "stranger CA", in: directory)

        let system = try CACertificates.system(environment: ["SSL_CERT_FILE": bundle.path, "SSL_CERT_DIR": "\(empty.path):\(hashed.path)"])
        #expect(try verifies(fromBundle, against: system))
        #expect(try verifies(fromDirectory, against: system))
        #expect(try !verifies(fromStranger, against: system))
        // The bundle as a CA file of its own has no directory.
        #expect(try !verifies(fromDirectory, against: CACertificates.shared(path: bundle.path)))

        // Unset (or empty) variables: OpenSSL's compiled-in paths, here the test's.
        let missing = directory.appendingPathComponent("no-bundle.pem").path
        let onlyDirectory = try CACertificates.system(environment: ["SSL_CERT_FILE": ""], defaults: (missing, hashed.path))
        #expect(try verifies(fromDirectory, against: onlyDirectory) && !verifies(fromBundle, against: onlyDirectory))
        let nowhere = directory.appendingPathComponent("no-certs").path
        #expect { try CACertificates.system(environment: [:], defaults: (missing, nowhere)) } throws: { error in
            "\(error)" == "cannot load CA certificates from \(missing): No such file or directory, nor a certificate directory at \(nowhere)"
        }
    }
}
