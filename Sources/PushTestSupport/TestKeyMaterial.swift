import COpenSSL
import COpenSSLShims

/// Credentials made up for tests; they leave the shipped modules.
public enum TestKeyMaterial {
    public struct GenerationError: Error, CustomStringConvertible {
        public let description: String
    }

    /// A fresh P-256 private key in PKCS#8 PEM, the format of Apple's `.p8` files.
    public static func p256PrivateKeyPEM() throws(GenerationError) -> String {
        guard let key = pushd_evp_ec_gen("P-256") else { throw GenerationError(description: "EC key generation failed") }
        defer { EVP_PKEY_free(key) }
        guard let bio = BIO_new(BIO_s_mem()) else { throw GenerationError(description: "cannot allocate a BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            throw GenerationError(description: "cannot write the key")
        }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = pushd_bio_get_mem_data(bio, &data)
        guard length > 0, let data else { throw GenerationError(description: "empty PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}
