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

int pushd_ssl_set_server_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

void pushd_ssl_ctx_refuse_renegotiation(SSL_CTX *ctx) { SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION); }

int pushd_ssl_ctx_require_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
