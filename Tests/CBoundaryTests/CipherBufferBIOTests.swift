import COpenSSL
import COpenSSLShims
import Testing

/// The BIO a TLS session writes its records to (`cipher_buffer_bio.c`): what is written
/// comes out once, in order, however the writes and the sends that consume it interleave.
@Suite("Cipher buffer BIO")
struct CipherBufferBIOTests {
    private static func pending(_ bio: OpaquePointer) -> [UInt8] {
        var data: UnsafePointer<UInt8>?
        let count = pushd_cipher_bio_pending(bio, &data)
        guard let data else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: count))
    }

    private static func write(_ bio: OpaquePointer, _ bytes: [UInt8]) -> Bool {
        var written = 0
        return BIO_write_ex(bio, bytes, bytes.count, &written) == 1 && written == bytes.count
    }

    @Test("partial consumes, writes in between, growth past the first 16 KiB: every byte once, in order")
    func interleaved() throws {
        let bio = try #require(pushd_cipher_bio_new())
        defer { BIO_free(bio) }
        #expect(Self.pending(bio).isEmpty)
        var generator = SystemRandomNumberGenerator()
        var expected: [UInt8] = []
        var received: [UInt8] = []
        for round in 0..<200 {
            // From a few bytes to 40 KiB, so both the move to the front and the growth run.
            let chunk = (0..<Int.random(in: 1...(round % 10 == 0 ? 40_000 : 3_000), using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            #expect(Self.write(bio, chunk))
            expected += chunk
            let available = Self.pending(bio)
            #expect(available == Array(expected[received.count...]))
            // Sometimes all (the socket took everything), sometimes part, sometimes nothing.
            let take = [available.count, available.count / 3, 0][round % 3]
            received += available.prefix(take)
            pushd_cipher_bio_consume(bio, take)
        }
        let rest = Self.pending(bio)
        received += rest
        pushd_cipher_bio_consume(bio, rest.count)
        #expect(received == expected)
        #expect(Self.pending(bio).isEmpty)
        #expect(BIO_ctrl_wpending(bio) == 0)
    }

    @Test("consuming more than is pending drops what there is; a flush succeeds; reading gives nothing")
    func edges() throws {
        let bio = try #require(pushd_cipher_bio_new())
        defer { BIO_free(bio) }
        #expect(Self.write(bio, [1, 2, 3]))
        #expect(BIO_ctrl_wpending(bio) == 3)
        #expect(BIO_ctrl(bio, BIO_CTRL_FLUSH, 0, nil) == 1)
        pushd_cipher_bio_consume(bio, 10)
        #expect(Self.pending(bio).isEmpty)
        var byte: UInt8 = 0
        #expect(BIO_read(bio, &byte, 1) <= 0)
        #expect(Self.write(bio, [4]))
        #expect(Self.pending(bio) == [4])
    }
}
