/// Umbrella header: the CCurl boundary exposes these headers to Swift unchanged.
#include <curl/curl.h>
