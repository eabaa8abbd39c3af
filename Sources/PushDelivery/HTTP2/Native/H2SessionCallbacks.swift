import CNGHTTP2

/// The nghttp2 callback table shared by every session of one loop. Each callback finds
/// its `H2Connection` through the session's user data (an unretained reference: the loop
/// owns the connection for as long as its session exists) and goes straight to it.
final class H2SessionCallbacks {
    let pointer: OpaquePointer

    init() throws(HTTPClientError) {
        var table: OpaquePointer?
        guard nghttp2_session_callbacks_new(&table) == 0, let table else {
            throw .transport(code: -1, message: "nghttp2_session_callbacks_new failed")
        }
        pointer = table
        nghttp2_session_callbacks_set_on_header_callback(table, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(table, onDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(table, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_recv_callback(table, onFrame)
    }

    deinit {
        nghttp2_session_callbacks_del(pointer)
    }
}

/// Runs `body` with the session's connection without retaining it for the call. Safe
/// because every callback runs inside one of the connection's own methods (`handle` and
/// `flush`, which call `mem_recv` and `mem_send` on its session), and the loop calls those
/// through a strong reference it holds for the whole call; the connection frees its session
/// before it goes. (Taking it as a strong reference here cost a retain and a release per
/// callback, four or five callbacks per push.)
@inline(__always)
private func withConnection<Result>(_ userData: UnsafeMutableRawPointer?, otherwise: Result, _ body: (H2Connection) -> Result) -> Result {
    guard let userData else { return otherwise }
    return Unmanaged<H2Connection>.fromOpaque(userData)._withUnsafeGuaranteedRef(body)
}

/// One response header; `:status` is parsed, other pseudo-headers are dropped.
private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let name, let value, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
    let streamID = frame.pointee.hd.stream_id
    let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
    let valueBytes = UnsafeBufferPointer(start: value, count: valueLength)
    return withConnection(userData, otherwise: 0) { connection in
        if nameBytes.first == UInt8(ascii: ":") {
            if RequestHeaders.equals(nameBytes, ":status"), let status = statusCode(valueBytes) {
                connection.received(status: status, for: streamID)
            }
            return 0
        }
        connection.received(header: nameBytes, value: valueBytes, for: streamID)
        return 0
    }
}

/// `:status` is three digits (RFC 9113 §8.3.2); anything else is no status.
private func statusCode(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    guard bytes.count == 3 else { return nil }
    var status = 0
    for byte in bytes {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        status = status * 10 + Int(byte - UInt8(ascii: "0"))
    }
    return status
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    guard let data else { return 0 }
    return withConnection(userData, otherwise: 0) { connection in
        connection.received(body: UnsafeBufferPointer(start: data, count: length), for: streamID)
        return 0
    }
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    withConnection(userData, otherwise: 0) { connection in
        connection.closed(streamID: streamID, errorCode: errorCode)
        return 0
    }
}

/// Called for every frame received (each response's HEADERS and DATA too); only the
/// connection-level ones matter here.
private let onFrame: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame else { return 0 }
    let flags = frame.pointee.hd.flags
    let isAck = flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
    switch UInt32(frame.pointee.hd.type) {
    case NGHTTP2_GOAWAY.rawValue:
        withConnection(userData, otherwise: ()) { $0.receivedGoAway() }
    case NGHTTP2_PING.rawValue where isAck:
        withConnection(userData, otherwise: ()) { $0.receivedPingAck() }
    case NGHTTP2_SETTINGS.rawValue where !isAck:
        withConnection(userData, otherwise: ()) { $0.receivedSettings() }
    default:
        break
    }
    return 0
}

/// nghttp2 asks for the next part of a request body.
let requestBodyCallback: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    let failure = Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
    guard let buffer, let flags else { return failure }
    return withConnection(userData, otherwise: failure) { connection in
        connection.requestBody(for: streamID, into: buffer, length: length, flags: flags)
    }
}
