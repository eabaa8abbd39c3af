import PushDelivery
import PushRuntime
import Testing

/// The HTTP/2 loop is a service: its thread starts in `run()`, not when the client is made.
@Suite("HTTP/2 client lifecycle")
struct HTTP2LifecycleTests {
    @Test("a request sent to a client that never ran fails with shutDown once the client is shut down")
    func neverStarted() async throws {
        let client = try HTTP2Client()
        let request = HTTPRequest(method: .get, url: "https://127.0.0.1:9/never", headers: [], body: [], timeout: .seconds(5))
        async let answer: Result<HTTPResponse, HTTPClientError> = {
            do throws(HTTPClientError) { return .success(try await client.send(request)) } catch { return .failure(error) }
        }()
        await client.shutdown()
        let result = await answer
        guard case .failure(let error) = result else { Issue.record("answered: \(result)"); return }
        #expect(error == .shutDown)
    }

    @Test("run returns once shutdown is signalled, and the client then refuses requests")
    func runsAsService() async throws {
        let client = try HTTP2Client()
        let shutdown = ShutdownSignal()
        async let running: Void = client.run(shutdown: shutdown)
        shutdown.trigger()
        try await running
        let request = HTTPRequest(method: .get, url: "https://127.0.0.1:9/after", headers: [], body: [], timeout: .seconds(5))
        await #expect(throws: HTTPClientError.shutDown) { try await client.send(request) }
    }
}
