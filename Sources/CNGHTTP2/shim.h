/// Umbrella header: the CNGHTTP2 boundary exposes nghttp2's one header to Swift unchanged.
#include <nghttp2/nghttp2.h>
