/// Umbrella header: the COpenSSL boundary exposes these headers to Swift unchanged.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/bio.h>
#include <openssl/x509.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <openssl/core_names.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
