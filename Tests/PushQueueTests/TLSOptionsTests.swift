import Foundation
@testable import PushQueue
@testable import PushTLS
import PushTestSupport
import Testing

/// What an `amqps` connection trusts: the process's one store for its CA configuration, so the
/// system's bundle is parsed once for AMQP and HTTP/2 together (`CACertificates`).
@Suite("AMQP TLS trust")
struct TLSOptionsTests {
    @Test("without a CA file the system's store, the one the HTTP/2 clients use; with one, that file's")
    func trustedCertificates() throws {
        #expect(try TLSOptions().trustedCertificates() === CACertificates.system())
        let directory = try BuildProducts.temporaryDirectory("amqp-trust")
        defer { try? FileManager.default.removeItem(at: directory) }
        try TestKeyMaterial.certificateAuthority(named: "ca", in: directory)
        let path = directory.appendingPathComponent("ca.pem").path
        let options = TLSOptions(caCertificateFile: path)
        #expect(try options.trustedCertificates() === CACertificates.shared(path: path))
        #expect(try options.trustedCertificates() !== CACertificates.system())
    }
}
