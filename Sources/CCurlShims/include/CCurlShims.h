#ifndef PUSHD_CCURL_SHIMS_H
#define PUSHD_CCURL_SHIMS_H

/// Typed, non-variadic forwards for libcurl's variadic option setters, which Swift cannot
/// call. One function per argument type keeps each call site type-checked.

#include <curl/curl.h>

CURLcode pushd_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode pushd_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode pushd_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode pushd_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode pushd_curl_easy_setopt_write_callback(CURL *handle, CURLoption option,
                                               size_t (*callback)(char *, size_t, size_t, void *));
CURLcode pushd_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode pushd_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);
CURLcode pushd_curl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value);
/// `curl_version_info(CURLVERSION_NOW)`: the macro names whichever struct age this build knows.
curl_version_info_data *pushd_curl_version_info(void);

CURLMcode pushd_curl_multi_setopt_long(CURLM *handle, CURLMoption option, long value);

#endif
