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

private func connection(_ userData: UnsafeMutableRawPointer?) -> H2Connection? {
    guard let userData else { return nil }
    return Unmanaged<H2Connection>.fromOpaque(userData).takeUnretainedValue()
}

/// One response header; `:status` is parsed, other pseudo-headers are dropped.
private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let name, let value, let connection = connection(userData),
          frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue)
    else { return 0 }
    let streamID = frame.pointee.hd.stream_id
    let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
    let valueBytes = UnsafeBufferPointer(start: value, count: valueLength)
    if nameBytes.first == UInt8(ascii: ":") {
        if nameBytes.elementsEqual(":status".utf8), let status = Int(String(decoding: valueBytes, as: UTF8.self)) {
            connection.received(status: status, for: streamID)
        }
        return 0
    }
    connection.received(header: nameBytes, value: valueBytes, for: streamID)
    return 0
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    guard let data, let connection = connection(userData) else { return 0 }
    connection.received(body: UnsafeBufferPointer(start: data, count: length), for: streamID)
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    connection(userData)?.closed(streamID: streamID, errorCode: errorCode)
    return 0
}

private let onFrame: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame, let connection = connection(userData) else { return 0 }
    switch UInt32(frame.pointee.hd.type) {
    case NGHTTP2_GOAWAY.rawValue:
        connection.receivedGoAway()
    case NGHTTP2_PING.rawValue where frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
        connection.receivedPingAck()
    case NGHTTP2_SETTINGS.rawValue where frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
        connection.receivedSettings()
    default:
        break
    }
    return 0
}

/// nghttp2 asks for the next part of a request body.
let requestBodyCallback: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let buffer, let flags, let connection = connection(userData) else {
        return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
    }
    return connection.requestBody(for: streamID, into: buffer, length: length, flags: flags)
}
