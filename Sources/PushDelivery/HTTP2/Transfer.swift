import CCurl
import CCurlShims
import Foundation

/// One request in flight: its easy handle, header list and the response as it arrives.
///
/// `@unchecked Sendable` is safe because ownership moves exactly once: the caller builds
/// it and sets `continuation`, then hands it to the loop through the loop's locked inbox;
/// from then on only the loop thread reads or writes it, including the curl callbacks
/// (which libcurl invokes on the thread calling `curl_multi_perform`, the loop thread). A
/// cancellation handler only hands the reference back through the same inbox.
final class Transfer: @unchecked Sendable {  // safe: see the proof above
    typealias Completion = CheckedContinuation<Result<HTTPResponse, HTTPClientError>, Never>

    static let maximumResponseBytes = 1 << 20

    let id: UInt64
    let request: HTTPRequest
    var continuation: Completion?
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var responseHeaders = HTTPHeaders()
    var responseBody: [UInt8] = []
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    init(id: UInt64, request: HTTPRequest) {
        self.id = id
        self.request = request
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// Resumes the waiting task once; later calls are ignored.
    func complete(_ result: Result<HTTPResponse, HTTPClientError>) {
        continuation?.resume(returning: result)
        continuation = nil
    }

    /// Frees the libcurl resources (the loop removes the handle from the multi first).
    func releaseHandles() {
        if let easy { curl_easy_cleanup(easy) }
        easy = nil
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
    }

    var curlErrorMessage: String {
        String(cString: errorBuffer)
    }
}

/// libcurl's body callback: appends to the transfer's response body.
let transferWriteCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard let data, length > 0 else { return length }
    // Refusing the bytes makes libcurl abort the transfer with a write error.
    guard transfer.responseBody.count + length <= Transfer.maximumResponseBytes else { return 0 }
    transfer.responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
    return length
}

/// libcurl's header callback: one header line per call, the status line first.
let transferHeaderCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    let length = size * count
    guard let context, let data, length > 0 else { return length }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: length).bindMemory(to: UInt8.self)
    if bytes.starts(with: "HTTP/".utf8) {
        // A new response (after an interim 100 Continue): start its headers afresh.
        transfer.responseHeaders.removeAll()
    } else if let (name, value) = HeaderLine.parse(bytes) {
        transfer.responseHeaders[name] = value
    }
    return length
}

/// One response header line split into a lower-cased name and a trimmed value.
///
/// Runs for every header of every response on the loop thread, so an ASCII line (every
/// line APNs and FCM send) is split on its bytes; anything else goes through Foundation,
/// which trims Unicode whitespace too.
enum HeaderLine {
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> (name: String, value: String)? {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return parseUnicode(bytes) }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = String(unsafeUninitializedCapacity: colon) { output in
            for index in 0..<colon {
                let byte = bytes[index]
                output[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
            }
            return colon
        }
        var start = colon + 1
        var end = bytes.count
        while start < end, isWhitespace(bytes[start]) { start += 1 }
        while end > start, isWhitespace(bytes[end - 1]) { end -= 1 }
        return (name, String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self))
    }

    /// ASCII whitespace and newlines, as Foundation's `.whitespacesAndNewlines` has them.
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (byte >= 0x09 && byte <= 0x0D)
    }

    private static func parseUnicode(_ bytes: UnsafeBufferPointer<UInt8>) -> (name: String, value: String)? {
        let line = String(decoding: bytes, as: UTF8.self)
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        return (name, value)
    }
}
