import CRabbitMQ
import Foundation

/// C memory for the arguments of rabbitmq-c calls (strings, field tables). rabbitmq-c copies
/// what it needs while encoding a frame, so an arena lives exactly as long as the call it
/// feeds and frees everything at once when released.
///
/// Not Sendable: an arena belongs to the one connection thread that makes the call.
final class CArena {
    private var blocks: [UnsafeMutableRawPointer] = []

    init() {}

    deinit {
        for block in blocks { free(block) }
    }

    private func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        // malloc(0) may return NULL; one byte keeps every pointer valid and distinct.
        guard let block = malloc(max(size, 1)) else { fatalError("out of memory allocating \(size) bytes") }
        blocks.append(block)
        return block
    }

    func bytes<Bytes: Collection<UInt8>>(_ source: Bytes) -> amqp_bytes_t {
        let count = source.count
        let block = allocate(count)
        let buffer = UnsafeMutableRawBufferPointer(start: block, count: count)
        buffer.copyBytes(from: source)
        return amqp_bytes_t(len: count, bytes: block)
    }

    func bytes(_ text: String) -> amqp_bytes_t {
        bytes(text.utf8)
    }

    /// A NUL-terminated copy, for the few rabbitmq-c calls that take C strings.
    func cString(_ text: String) -> UnsafePointer<CChar> {
        let utf8 = Array(text.utf8)
        let block = allocate(utf8.count + 1)
        block.copyMemory(from: utf8, byteCount: utf8.count)
        block.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
        return UnsafePointer(block.assumingMemoryBound(to: CChar.self))
    }

    /// Entries are written in key order, so equal tables encode to equal bytes.
    func table(_ entries: [String: HeaderValue]) -> amqp_table_t {
        guard !entries.isEmpty else { return amqp_table_t(num_entries: 0, entries: nil) }
        let block = allocate(MemoryLayout<amqp_table_entry_t>.stride * entries.count)
        let typed = block.bindMemory(to: amqp_table_entry_t.self, capacity: entries.count)
        for (index, (key, value)) in entries.sorted(by: { $0.key < $1.key }).enumerated() {
            (typed + index).initialize(to: amqp_table_entry_t(key: bytes(key), value: field(value)))
        }
        return amqp_table_t(num_entries: Int32(entries.count), entries: typed)
    }

    func field(_ value: HeaderValue) -> amqp_field_value_t {
        var result = amqp_field_value_t()
        switch value {
        case .string(let text):
            result.kind = kind(AMQP_FIELD_KIND_UTF8)
            result.value.bytes = bytes(text)
        case .int(let number):
            result.kind = kind(AMQP_FIELD_KIND_I64)
            result.value.i64 = number
        case .bool(let flag):
            result.kind = kind(AMQP_FIELD_KIND_BOOLEAN)
            result.value.boolean = flag ? 1 : 0
        case .double(let number):
            result.kind = kind(AMQP_FIELD_KIND_F64)
            result.value.f64 = number
        case .bytes(let data):
            result.kind = kind(AMQP_FIELD_KIND_BYTES)
            result.value.bytes = bytes(data)
        case .timestamp(let seconds):
            result.kind = kind(AMQP_FIELD_KIND_TIMESTAMP)
            result.value.u64 = seconds
        case .array(let values):
            result.kind = kind(AMQP_FIELD_KIND_ARRAY)
            let block = allocate(MemoryLayout<amqp_field_value_t>.stride * max(values.count, 1))
            let typed = block.bindMemory(to: amqp_field_value_t.self, capacity: max(values.count, 1))
            for (index, element) in values.enumerated() {
                (typed + index).initialize(to: field(element))
            }
            result.value.array = amqp_array_t(num_entries: Int32(values.count), entries: typed)
        case .table(let entries):
            result.kind = kind(AMQP_FIELD_KIND_TABLE)
            result.value.table = table(entries)
        case .void:
            result.kind = kind(AMQP_FIELD_KIND_VOID)
        }
        return result
    }

    private func kind(_ kind: amqp_field_value_kind_t) -> UInt8 {
        UInt8(truncatingIfNeeded: kind.rawValue)
    }
}
