// Why jemalloc: a worker allocates some forty blocks per delivery (Swift tasks, strings,
// arrays; OpenSSL's bignums), many past the 1 KiB up to which glibc keeps per-thread
// caches. glibc's malloc and free were 15% of a draining worker's CPU samples; with
// jemalloc the worker's CPU per delivery fell 4–10% (`bench pipeline --only backlog
// --rounds 3 --baseline`, README).
#define _GNU_SOURCE
#include "CJemalloc.h"
#include <dlfcn.h>
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Read by jemalloc at its first allocation; MALLOC_CONF in the environment still overrides
// any of it. One arena: a worker has a few busy threads, each with its own cache in front
// of the arena, and every extra arena holds its own partly used pages. Freed pages go
// back to the system within a second rather than ten, so peak memory tracks what is in use.
const char *malloc_conf = "narenas:1,dirty_decay_ms:1000,muzzy_decay_ms:0";

int pushd_jemalloc_describe(char *buffer, size_t capacity) {
    // Which library `malloc` resolves to, as every caller in the process sees it: jemalloc
    // being loaded is not enough.
    Dl_info origin;
    if (dladdr((void *)&malloc, &origin) == 0 || origin.dli_fname == NULL || strstr(origin.dli_fname, "jemalloc") == NULL) {
        return 0;
    }
    const char *version = NULL;
    unsigned arenas = 0;
    ssize_t decay = 0;
    size_t length = sizeof version;
    if (mallctl("version", &version, &length, NULL, 0) != 0 || version == NULL) return 0;
    length = sizeof arenas;
    if (mallctl("opt.narenas", &arenas, &length, NULL, 0) != 0) return 0;
    length = sizeof decay;
    if (mallctl("opt.dirty_decay_ms", &decay, &length, NULL, 0) != 0) return 0;
    snprintf(buffer, capacity, "jemalloc %s, narenas %u, dirty_decay_ms %zd", version, arenas, decay);
    return 1;
}
