/// Umbrella header: the CPostgreSQL boundary exposes these headers to Swift unchanged.
#include <libpq-fe.h>
