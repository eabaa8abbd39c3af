// Why jemalloc: a worker allocates some forty blocks per delivery (Swift tasks, strings,
// arrays; OpenSSL's bignums), many past the 1 KiB up to which glibc keeps per-thread
// caches. glibc's malloc and free were 15% of a draining worker's CPU samples; with
// jemalloc the worker's CPU per delivery fell about 10% (`bench pipeline --only backlog
// --rounds 3 --baseline`, README).
#include "CJemalloc.h"
#include <jemalloc/jemalloc.h>
#include <stddef.h>

// Read by jemalloc at its first allocation; MALLOC_CONF in the environment still overrides
// any of it. One arena: a worker has a few busy threads, each with its own cache in front
// of the arena, and every extra arena holds its own partly used pages. Freed pages go
// back to the system within a second rather than ten, so peak memory tracks what is in use.
const char *malloc_conf = "narenas:1,dirty_decay_ms:1000,muzzy_decay_ms:0";

const char *pushd_jemalloc_version(void) {
    const char *version = NULL;
    size_t length = sizeof version;
    return mallctl("version", &version, &length, NULL, 0) == 0 ? version : NULL;
}
