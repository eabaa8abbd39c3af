@testable import PushDelivery
import Testing

@Suite("Response headers kept by name")
struct HTTPHeadersTests {
    @Test("a name set twice keeps its last value; names come in arrival order")
    func lastValueWins() {
        var headers = HTTPHeaders()
        #expect(headers.isEmpty && headers["apns-id"] == nil)
        headers["apns-id"] = "a"
        headers["retry-after"] = "120"
        headers["apns-id"] = "b"
        headers["retry-after"] = "60"
        #expect(headers["apns-id"] == "b" && headers["retry-after"] == "60")
        #expect(headers.names == ["apns-id", "retry-after"])
        #expect(headers["content-type"] == nil)
    }

    @Test("removing a field keeps the others, the inline first one included")
    func removal() {
        var headers: HTTPHeaders = ["a": "1", "b": "2", "c": "3"]
        headers["a"] = nil
        #expect(headers["a"] == nil && headers["b"] == "2" && headers["c"] == "3" && headers.names.count == 2)
        headers["c"] = nil
        headers["b"] = nil
        #expect(headers.isEmpty && headers.names.isEmpty)
        headers["d"] = "4"
        headers.removeAll()
        #expect(headers.isEmpty)
    }

    @Test("equal when the same names carry the same values, whatever their order")
    func equality() {
        let one: HTTPHeaders = ["a": "1", "b": "2"]
        var other = HTTPHeaders()
        other["b"] = "2"
        other["a"] = "1"
        #expect(one == other)
        other["a"] = "9"
        #expect(one != other)
        #expect(HTTPHeaders(["a": "1"]) != one)
    }
}
