// A write-only BIO for a TLS session's outgoing records: one growing buffer that the
// connection sends from in place and then drops what the socket took.
//
// Not a forward like `shims.c`: OpenSSL's memory BIO, used before, went over every byte of
// ciphertext three times besides the send itself. `BUF_MEM_grow_clean` zeroes the room
// for each write before copying into it, and the only way to drop bytes the socket took
// was `BIO_read`, a copy into a scratch buffer. Here a write is one copy and dropping is
// moving an offset (callgrind: 7,300 of a delivery's 86,600 instructions outside
// libcrypto were those `memset`s and `memcpy`s).
#include "COpenSSLShims.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/// `data[start..<end]` is written and not yet sent.
typedef struct {
    unsigned char *data;
    size_t start;
    size_t end;
    size_t capacity;
} cipher_buffer;

static BIO_METHOD *cipher_buffer_method;
static pthread_once_t cipher_buffer_method_once = PTHREAD_ONCE_INIT;

static int cipher_buffer_write(BIO *bio, const char *bytes, size_t length, size_t *written) {
    cipher_buffer *buffer = BIO_get_data(bio);
    *written = 0;
    if (buffer == NULL) return 0;
    if (buffer->start == buffer->end) buffer->start = buffer->end = 0;
    if (buffer->capacity - buffer->end < length) {
        // Unsent bytes to the front first; grow only if that is not room enough.
        size_t pending = buffer->end - buffer->start;
        if (buffer->start > 0) {
            memmove(buffer->data, buffer->data + buffer->start, pending);
            buffer->start = 0;
            buffer->end = pending;
        }
        if (buffer->capacity - pending < length) {
            if (length > SIZE_MAX / 2 - pending) return 0;
            size_t capacity = buffer->capacity > 0 ? buffer->capacity : 16 * 1024;
            while (capacity < pending + length) capacity *= 2;
            unsigned char *grown = realloc(buffer->data, capacity);
            if (grown == NULL) return 0;
            buffer->data = grown;
            buffer->capacity = capacity;
        }
    }
    if (length > 0) memcpy(buffer->data + buffer->end, bytes, length);
    buffer->end += length;
    *written = length;
    return 1;
}

static long cipher_buffer_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)number;
    (void)pointer;
    cipher_buffer *buffer = BIO_get_data(bio);
    switch (command) {
    case BIO_CTRL_FLUSH:
        // Nothing to push further: the connection sends what is here.
        return 1;
    case BIO_CTRL_WPENDING:
        return buffer == NULL ? 0 : (long)(buffer->end - buffer->start);
    default:
        return 0;
    }
}

static int cipher_buffer_create(BIO *bio) {
    cipher_buffer *buffer = calloc(1, sizeof *buffer);
    if (buffer == NULL) return 0;
    BIO_set_data(bio, buffer);
    BIO_set_init(bio, 1);
    return 1;
}

static int cipher_buffer_destroy(BIO *bio) {
    cipher_buffer *buffer = BIO_get_data(bio);
    if (buffer != NULL) {
        free(buffer->data);
        free(buffer);
    }
    BIO_set_data(bio, NULL);
    BIO_set_init(bio, 0);
    return 1;
}

static void cipher_buffer_make_method(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "pushd cipher buffer");
    if (method == NULL) return;
    if (!BIO_meth_set_write_ex(method, cipher_buffer_write) || !BIO_meth_set_ctrl(method, cipher_buffer_ctrl)
        || !BIO_meth_set_create(method, cipher_buffer_create) || !BIO_meth_set_destroy(method, cipher_buffer_destroy)) {
        BIO_meth_free(method);
        return;
    }
    cipher_buffer_method = method;
}

BIO *pushd_cipher_bio_new(void) {
    pthread_once(&cipher_buffer_method_once, cipher_buffer_make_method);
    return cipher_buffer_method == NULL ? NULL : BIO_new(cipher_buffer_method);
}

size_t pushd_cipher_bio_pending(BIO *bio, const unsigned char **data) {
    cipher_buffer *buffer = BIO_get_data(bio);
    if (buffer == NULL || buffer->start == buffer->end) {
        *data = NULL;
        return 0;
    }
    *data = buffer->data + buffer->start;
    return buffer->end - buffer->start;
}

void pushd_cipher_bio_consume(BIO *bio, size_t count) {
    cipher_buffer *buffer = BIO_get_data(bio);
    if (buffer == NULL) return;
    size_t pending = buffer->end - buffer->start;
    buffer->start += count < pending ? count : pending;
}
