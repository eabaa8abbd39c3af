// OpenSSL 3 deprecates the low-level digest functions in favour of EVP, but keeps them
// (its own providers are built on them). They are used here on purpose: OpenSSL 3.0's
// `EVP_DigestInit_ex2` frees and reallocates the provider's digest state on every call,
// and OAEP padding needs sixteen SHA-1 blocks per envelope (see `OAEPEncoding`).
#define OPENSSL_SUPPRESS_DEPRECATED
#include "COpenSSLShims.h"
#include <openssl/crypto.h>
#include <openssl/sha.h>

int pushd_sha1_with_counter(const unsigned char *data, size_t length, uint32_t counter, unsigned char *digest) {
    const unsigned char suffix[4] = {
        (unsigned char)(counter >> 24), (unsigned char)(counter >> 16), (unsigned char)(counter >> 8), (unsigned char)counter,
    };
    SHA_CTX context;
    int ok = SHA1_Init(&context) && SHA1_Update(&context, data, length) && SHA1_Update(&context, suffix, sizeof suffix)
        && SHA1_Final(digest, &context);
    // The final state is the digest, which masks secret bytes: leave no copy on the stack.
    OPENSSL_cleanse(&context, sizeof context);
    return ok;
}
