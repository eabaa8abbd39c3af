@testable import PushDelivery
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
            #expect(try TLSClientContext.shared(caFile: nil) !== first)
            released = first
        }
        // Held weakly: once nothing holds it, the context is freed, and a CA file replaced by
        // then is read again.
        #expect(released == nil)
        // Two clients at once on one shared context, each verifying the emulator's certificate.
        let clients = try (0..<2).map { _ in try HTTP2Client(configuration: .init(caFile: emulator.caFile)) }
        for client in clients { client.start() }
        for client in clients {
            let response = try await client.send(HTTPRequest(method: .get, url: emulator.url + "/", timeout: .seconds(10)))
            #expect((200..<600).contains(response.status))
        }
        for client in clients { await client.shutdown() }
        await emulator.stop()
    }

    @Test("a CA file that cannot be loaded fails where the client is made, and is not remembered")
    func unreadableCAFile() {
        let path = "/nonexistent/pushd-ca-\(UInt64.random(in: 0...UInt64.max)).pem"
        for _ in 0..<2 {
            #expect(throws: HTTPClientError.self) { _ = try TLSClientContext.shared(caFile: path) }
        }
    }
}
