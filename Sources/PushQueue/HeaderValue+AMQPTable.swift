import CRabbitMQ

extension HeaderValue {
    /// Copies a field table received from the broker into Swift values. Keys that repeat
    /// keep their last value; values of kinds Swift has no case for are widened (any integer
    /// to `.int`, decimals and floats to `.double`).
    static func decode(_ table: amqp_table_t) -> [String: HeaderValue] {
        guard table.num_entries > 0, let entries = table.entries else { return [:] }
        var result: [String: HeaderValue] = [:]
        result.reserveCapacity(Int(table.num_entries))
        for index in 0..<Int(table.num_entries) {
            let entry = entries[index]
            result[String(amqpBytes: entry.key)] = decode(entry.value)
        }
        return result
    }

    static func decode(_ field: amqp_field_value_t) -> HeaderValue {
        let value = field.value
        switch Int32(field.kind) {
        case Int32(AMQP_FIELD_KIND_UTF8.rawValue):
            let bytes = [UInt8](amqpBytes: value.bytes)
            if let text = String(validating: bytes, as: UTF8.self) { return .string(text) }
            return .bytes(bytes)
        case Int32(AMQP_FIELD_KIND_BYTES.rawValue): return .bytes([UInt8](amqpBytes: value.bytes))
        case Int32(AMQP_FIELD_KIND_BOOLEAN.rawValue): return .bool(value.boolean != 0)
        case Int32(AMQP_FIELD_KIND_I8.rawValue): return .int(Int64(value.i8))
        case Int32(AMQP_FIELD_KIND_U8.rawValue): return .int(Int64(value.u8))
        case Int32(AMQP_FIELD_KIND_I16.rawValue): return .int(Int64(value.i16))
        case Int32(AMQP_FIELD_KIND_U16.rawValue): return .int(Int64(value.u16))
        case Int32(AMQP_FIELD_KIND_I32.rawValue): return .int(Int64(value.i32))
        case Int32(AMQP_FIELD_KIND_U32.rawValue): return .int(Int64(value.u32))
        case Int32(AMQP_FIELD_KIND_I64.rawValue): return .int(value.i64)
        case Int32(AMQP_FIELD_KIND_U64.rawValue):
            return value.u64 <= UInt64(Int64.max) ? .int(Int64(value.u64)) : .double(Double(value.u64))
        case Int32(AMQP_FIELD_KIND_F32.rawValue): return .double(Double(value.f32))
        case Int32(AMQP_FIELD_KIND_F64.rawValue): return .double(value.f64)
        case Int32(AMQP_FIELD_KIND_DECIMAL.rawValue):
            var scaled = Double(value.decimal.value)
            for _ in 0..<min(Int(value.decimal.decimals), 30) { scaled /= 10 }
            return .double(scaled)
        case Int32(AMQP_FIELD_KIND_TIMESTAMP.rawValue): return .timestamp(value.u64)
        case Int32(AMQP_FIELD_KIND_TABLE.rawValue): return .table(decode(value.table))
        case Int32(AMQP_FIELD_KIND_ARRAY.rawValue):
            guard value.array.num_entries > 0, let entries = value.array.entries else { return .array([]) }
            return .array((0..<Int(value.array.num_entries)).map { decode(entries[$0]) })
        default:
            return .void
        }
    }
}

extension String {
    /// A copy of AMQP bytes as text; invalid UTF-8 is repaired, never trusted.
    init(amqpBytes bytes: amqp_bytes_t) {
        guard bytes.len > 0, let base = bytes.bytes else {
            self = ""
            return
        }
        self = String(decoding: UnsafeRawBufferPointer(start: base, count: bytes.len), as: UTF8.self)
    }
}

extension Array where Element == UInt8 {
    init(amqpBytes bytes: amqp_bytes_t) {
        guard bytes.len > 0, let base = bytes.bytes else {
            self = []
            return
        }
        self = Array(UnsafeRawBufferPointer(start: base, count: bytes.len))
    }
}
