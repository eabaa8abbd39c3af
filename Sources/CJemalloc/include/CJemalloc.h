#ifndef PUSHD_CJEMALLOC_H
#define PUSHD_CJEMALLOC_H

/// The memory allocator the `pushd` executable links: jemalloc (Debian's `libjemalloc2`)
/// instead of glibc's malloc, with the settings `allocator.c` gives it. Nothing here is
/// called from Swift; `PushRuntime.Allocator` tells at run time which allocator is live.

/// jemalloc's version string, or NULL. Defined so that the executable refers to jemalloc
/// itself and the linker keeps the library even when it drops unreferenced ones.
const char *pushd_jemalloc_version(void);

#endif
