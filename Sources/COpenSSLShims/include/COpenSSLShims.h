#ifndef PUSHD_COPENSSL_SHIMS_H
#define PUSHD_COPENSSL_SHIMS_H

/// Wrappers for OpenSSL 3 macros that Swift cannot import (function-like macros and
/// macros that expand to variadic calls). Each one is a one-line forward with no logic,
/// except `pushd_sha1_with_counter` and the cipher buffer BIO at the end, whose files say
/// why they are not.

#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

/// `EVP_RSA_gen(bits)` is a macro over the variadic `EVP_PKEY_Q_keygen`.
EVP_PKEY *pushd_evp_rsa_gen(unsigned int bits);

/// `BIO_get_mem_data` is a macro over `BIO_ctrl`; returns the length and sets `*data`.
long pushd_bio_get_mem_data(BIO *bio, char **data);

/// `OPENSSL_free` is a macro that records the caller's file and line.
void pushd_openssl_free(void *pointer);

/// `EVP_CIPHER_CTX_ctrl` with the GCM get-tag / set-tag commands, named for clarity.
int pushd_gcm_get_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length);
int pushd_gcm_set_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length);

/// `SSL_set_tlsext_host_name`: the server name (SNI) sent in the TLS handshake.
int pushd_ssl_set_server_name(SSL *ssl, const char *name);

/// `SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION)`: HTTP/2 forbids TLS 1.2
/// renegotiation (RFC 9113 §9.2.1), so a server asking for it gets a refusal alert.
void pushd_ssl_ctx_refuse_renegotiation(SSL_CTX *ctx);

/// `SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)`: HTTP/2 requires TLS 1.2 or later.
int pushd_ssl_ctx_require_tls12(SSL_CTX *ctx);

/// SHA-1(`data` ‖ big-endian `counter`) into `digest` (20 bytes): one MGF1 block. Not a
/// forward like the rest: it goes through OpenSSL's low-level SHA-1 functions rather than
/// EVP, for the reason `sha1_counter.c` gives. Returns 1 on success.
int pushd_sha1_with_counter(const unsigned char *data, size_t length, uint32_t counter, unsigned char *digest);

/// A write-only BIO that keeps what is written to it (a TLS session's outgoing records) in
/// one growing buffer, sent from in place (`cipher_buffer_bio.c` says why). NULL if OpenSSL
/// could not make one. Freed with the session it is given to, or `BIO_free`.
BIO *pushd_cipher_bio_new(void);

/// The bytes written and not yet consumed: their count, and `*data` pointing at the first
/// (NULL if none). Valid until the next write or consume.
size_t pushd_cipher_bio_pending(BIO *bio, const unsigned char **data);

/// Drops the first `count` pending bytes (what the socket took); at most all of them.
void pushd_cipher_bio_consume(BIO *bio, size_t count);
#endif
