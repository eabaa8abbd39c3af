#ifndef PUSHD_CJEMALLOC_H
#define PUSHD_CJEMALLOC_H

#include <stddef.h>

/// The memory allocator the `pushd` executable links: jemalloc (Debian's `libjemalloc2`)
/// instead of glibc's malloc, with the settings `allocator.c` gives it.

/// Writes "jemalloc <version>, narenas <n>, dirty_decay_ms <ms>" (the settings jemalloc
/// runs with, read back through `mallctl`) into `buffer` and returns 1 when jemalloc is
/// the `malloc` this process calls; returns 0 otherwise (a library loaded earlier took
/// `malloc`), writing nothing.
int pushd_jemalloc_describe(char *buffer, size_t capacity);

#endif
