#include "COpenSSLShims.h"
#include <openssl/crypto.h>
#include <openssl/rsa.h>

EVP_PKEY *pushd_evp_rsa_gen(unsigned int bits) { return EVP_RSA_gen(bits); }

long pushd_bio_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

void pushd_openssl_free(void *pointer) { OPENSSL_free(pointer); }

int pushd_gcm_get_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, length, tag);
}

int pushd_gcm_set_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, length, tag);
}
