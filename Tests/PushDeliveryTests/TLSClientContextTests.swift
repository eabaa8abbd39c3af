import COpenSSL
import Foundation
@testable import PushDelivery
@testable import PushTLS
import PushTestSupport
import Testing

/// One TLS context per CA configuration per process: the system's store parses its whole
/// bundle for every context, so a worker's APNs and FCM loops share one instead of loading
/// it twice at every start.
@Suite("TLS client contexts")
struct TLSClientContextTests {
    @Test("loops of one CA file share its context while any holds it; another configuration gets its own")
    func sharedWhileHeld() async throws {
        let emulator = try EmulatorProcess.start()
        weak var released: TLSClientContext?
        do {
            let first = try TLSClientContext.shared(caFile: emulator.caFile)
            let second = try TLSClientContext.shared(caFile: emulator.caFile)
            #expect(first === second)
            let system = try TLSClientContext.shared(caFile: nil)
            #expect(system !== first)
            // Their certificates are the process's one store for each configuration; the
            // system's is the very store AMQP's connections verify a broker against.
            #expect(SSL_CTX_get_cert_store(system.pointer) == (try CACertificates.system()).store)
            #expect(SSL_CTX_get_cert_store(first.pointer) == (try CACertificates.shared(path: emulator.caFile)).store)
            released = first
        }
        // Held weakly: once nothing holds it, the context is freed, and a CA file replaced by
        // then is read again.
        #expect(released == nil)
        // Two clients (a worker's APNs and FCM) on one shared context, each verifying the
        // emulator's certificate.
        let clients = try (0..<2).map { _ in try HTTP2Client(configuration: .init(caFile: emulator.caFile)) }
        #expect(clients[0].tlsContext != nil && clients[0].tlsContext === clients[1].tlsContext)
        for client in clients { client.start() }
        for client in clients {
            let response = try await client.send(HTTPRequest(method: .get, url: emulator.url + "/", timeout: .seconds(10)))
            #expect((200..<600).contains(response.status))
        }
        for client in clients { await client.shutdown() }
        await emulator.stop()
    }

    @Test("a CA file that cannot be loaded fails where the client is made, and the failure is not remembered")
    func unreadableCAFile() throws {
        let directory = try BuildProducts.temporaryDirectory("tls-context")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("ca.pem").path
        #expect(throws: HTTPClientError.self) { _ = try HTTP2Client(configuration: .init(caFile: path)) }
        // The file made afterwards is read by the next client.
        try TestKeyMaterial.certificateAuthority(named: "ca", in: directory)
        let client = try HTTP2Client(configuration: .init(caFile: path))
        #expect(client.tlsContext != nil)
    }
}
