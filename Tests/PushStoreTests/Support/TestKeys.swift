import Foundation
import PushCrypto
import PushStore

/// Device keys for registration tests. RSA generation is slow, so a few are made once.
enum TestKeys {
    static let first: String = generate(format: \.pkcs1Base64)
    static let second: String = generate(format: \.subjectPublicKeyInfoBase64)
    static let third: String = generate(format: \.pem)

    private static func generate(format: KeyPath<DevicePublicKey, String>) -> String {
        // A failure here is an OpenSSL failure, not an input; the tests using the key fail on "".
        guard let key = try? DevicePrivateKey.generate().publicKey else { return "" }
        return key[keyPath: format]
    }

    /// A well-formed RSA-1024 key: refused as too small.
    static let rsa1024 = """
        -----BEGIN PUBLIC KEY-----
        MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCcpIJ7HfUQwCQtXko0K6UMTmqY
        yI49PnRpeCJPR+HAEK8le5VqoJxbLNFa1fWILqOLmMlpBfE695L7hZ1/W7hRtNTB
        LnejgLBgO2TWiOz3ND0IbDmuoGQThiAC04htGd6yIj9MsYmgQoWk8WPmTeyNao7N
        NICjaIfyeSYff30VSQIDAQAB
        -----END PUBLIC KEY-----
        """

    /// A fresh APNs-style token: 64 lower-case hex digits.
    static func apnsToken() -> String {
        (0..<4).map { _ in String(format: "%016llx", UInt64.random(in: .min ... .max)) }.joined()
    }
}
