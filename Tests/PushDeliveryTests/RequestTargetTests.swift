import Foundation
import Testing

@testable import PushDelivery
import CNGHTTP2

/// The native engine's URL parsing, checked against Foundation's reading of the same URLs,
/// and the request headers it builds for nghttp2.
@Suite("Native engine: request targets and header blocks")
struct RequestTargetTests {
    @Test("host, port, authority and path as Foundation reads them", arguments: [
        "https://api.push.apple.com/3/device/abcd",
        "https://api.sandbox.push.apple.com:443/3/device/abcd",
        "https://127.0.0.1:37183/3/device/00ff",
        "https://[::1]:8443/v1/projects/p/messages:send",
        "https://fcm.googleapis.com/v1/projects/demo-project/messages:send",
        "https://oauth2.googleapis.com/token",
        "https://example.com",
        "https://example.com?x=1",
        "https://example.com:8443/a/b?c=d&e=f",
    ])
    func agreesWithFoundation(url: String) throws {
        let target = try RequestTarget(url: url)
        let components = try #require(URLComponents(string: url))
        #expect(target.host == components.host?.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
        #expect(target.port == (components.port ?? 443))
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        #expect(target.path == path)
        let authorityEnd = url.dropFirst("https://".count).firstIndex { $0 == "/" || $0 == "?" }
        #expect(target.authority == String(url.dropFirst("https://".count)[..<(authorityEnd ?? url.endIndex)]))
    }

    @Test("a URL to a known origin reuses it and reads the same target as a fresh parse", arguments: [
        "https://api.push.apple.com/3/device/abcd",
        "https://127.0.0.1:37183/3/device/00ff",
        "https://[::1]:8443/v1/projects/p/messages:send",
        "https://example.com",
        "https://example.com?x=1",
        "https://example.com:8443/a/b?c=d&e=f",
    ])
    func reusesKnownOrigin(url: String) throws {
        let authorityEnd = url.dropFirst("https://".count).firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex
        let known = try RequestTarget(url: String(url[..<authorityEnd]) + "/elsewhere").origin
        let other = try RequestTarget(url: "https://unrelated.example.org/").origin
        let reused = try RequestTarget(url: url, reusing: [other, known])
        #expect(reused.origin === known)
        #expect(reused == (try RequestTarget(url: url)))
        // What the client's table of recent origins is told: reused, or new to add.
        #expect(try RequestTarget.parse(url: url, reusing: [other, known]).reused)
        #expect(try !RequestTarget.parse(url: url, reusing: [other]).reused)
    }

    @Test("an origin is not reused for a URL whose authority only begins the same", arguments: [
        "https://example.com.evil.org/a", "https://example.comx/a", "https://example.com:8443/a", "https://example.com@evil.org/a",
    ])
    func longerAuthorityNotReused(url: String) throws {
        let known = try RequestTarget(url: "https://example.com/a").origin
        let fresh = try? RequestTarget(url: url)
        let reused = try? RequestTarget(url: url, reusing: [known])
        #expect(reused?.origin !== known)
        #expect(reused == fresh)
        #expect((try? RequestTarget.parse(url: url, reusing: [known]))?.reused != true)
    }

    @Test("refused: other schemes, user information, no host, bad ports, whitespace", arguments: [
        "http://127.0.0.1/x", "https://", "https:///path", "https://user@host/x", "https://host:0/x",
        "https://host:65536/x", "https://host:12ab/x", "https://host:/x", "https://ho st/x", "https://[::1/x",
        "https://[::1]x/y", "ftp://host/x",
    ])
    func refused(url: String) {
        #expect(throws: RequestTarget.ParseError.self) { try RequestTarget(url: url) }
    }

    @Test("the header block: pseudo-headers first, names lower-cased, forbidden headers dropped, content-length added")
    func headerBlock() throws {
        let request = HTTPRequest(
            method: .post, url: "https://127.0.0.1:8443/3/device/ab",
            headers: [("Authorization", "bearer x"), ("Connection", "keep-alive"), ("apns-topic", "com.example.app"),
                      ("Expect", "100-continue"), ("Host", "elsewhere")],
            body: Array("{}".utf8), uniqueHeaderNames: [":path", "apns-topic"])
        let exchange = Exchange(id: 1, request: request, target: try RequestTarget(url: request.url), now: .now)
        let fields = Self.fields(of: exchange)
        // Values new on every request stay out of the HPACK table; the rest may enter it.
        #expect(fields.filter(\.2).map(\.0) == [":path", "apns-topic"])
        #expect(fields.map(\.0) == [":method", ":scheme", ":authority", ":path", "authorization", "apns-topic", "content-length"])
        #expect(fields.map(\.1) == ["POST", "https", "127.0.0.1:8443", "/3/device/ab", "bearer x", "com.example.app", "2"])
    }

    @Test("a shared block: its fields sent with the request's own, lower-cased, forbidden ones dropped, its content-length kept")
    func sharedHeaderBlock() throws {
        let shared = HeaderBlock(
            [("Authorization", "bearer x"), ("Transfer-Encoding", "chunked"), ("APNs-Topic", "com.example.app"), ("Content-Length", "2")],
            uniqueHeaderNames: ["apns-topic"])
        let request = HTTPRequest(
            method: .post, url: "https://127.0.0.1:8443/3/device/ab", sharedHeaders: shared, headers: [("apns-id", "id-1")],
            body: Array("{}".utf8), uniqueHeaderNames: [":path", "apns-id"])
        let exchange = Exchange(id: 1, request: request, target: try RequestTarget(url: request.url), now: .now)
        let fields = Self.fields(of: exchange)
        #expect(fields.map(\.0) == [":method", ":scheme", ":authority", ":path", "apns-id", "authorization", "apns-topic", "content-length"])
        #expect(fields.map(\.1) == ["POST", "https", "127.0.0.1:8443", "/3/device/ab", "id-1", "bearer x", "com.example.app", "2"])
        #expect(fields.filter(\.2).map(\.0) == [":path", "apns-id", "apns-topic"])
        // libcurl's engine gets the headers as they were given.
        #expect(shared.headers.map(\.name) == ["Authorization", "Transfer-Encoding", "APNs-Topic", "Content-Length"])
    }

    /// The header block nghttp2 gets for `exchange`: each field's name, value and whether it
    /// stays out of the HPACK table.
    static func fields(of exchange: Exchange) -> [(String, String, Bool)] {
        RequestHeaders.withNameValues(for: exchange) { block in
            block.map { field in
                (String(decoding: UnsafeBufferPointer(start: field.name, count: field.namelen), as: UTF8.self),
                 String(decoding: UnsafeBufferPointer(start: field.value, count: field.valuelen), as: UTF8.self),
                 field.flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0)
            }
        }
    }
}
