/// Standard base64 with padding, canonical only: what the server writes, and nothing else.
///
/// Not `Data(base64Encoded:)`: on Linux it accepts padding in the middle (`QU=I`) and extra
/// padding (`QUJD=`), so two different texts would open to the same bytes and a reader on
/// Linux would disagree with one on Apple platforms about what a payload is.
enum StrictBase64 {
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let isLast = index + 4 == input.count
            let padding = isLast ? (input[index + 3] == UInt8(ascii: "=") ? (input[index + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var group: UInt32 = 0
            for offset in 0..<4 {
                let character = input[index + offset]
                if offset >= 4 - padding {
                    group <<= 6
                    continue
                }
                let value = values[Int(character)]
                guard value != 0xFF else { return nil }
                group = group << 6 | UInt32(value)
            }
            output.append(UInt8(truncatingIfNeeded: group >> 16))
            if padding < 2 { output.append(UInt8(truncatingIfNeeded: group >> 8)) }
            if padding < 1 { output.append(UInt8(truncatingIfNeeded: group)) }
            // Canonical: the bits the padding leaves over must be zero.
            if padding == 1, group & 0xFF != 0 { return nil }
            if padding == 2, group & 0xFFFF != 0 { return nil }
            index += 4
        }
        return output
    }
}
