/* SPDX-License-Identifier: MIT */
/* crypto_default.c: the default crypto backend (pure_crypto_default), what a context uses unless
 * its settings name another: which library serves each primitive, and for each AEAD context the
 * implementation, chosen once when its key is scheduled.
 *
 * - randomness: the kernel (getrandom(2)), not OpenSSL's DRBG (os_random says why);
 * - X25519 public keys, SHA-256, HMAC: Nettle where the build has it (prims_nettle.c says why),
 *   else OpenSSL;
 * - X25519 key agreement: OpenSSL, faster than Nettle's with a peer's point (prims_nettle.c);
 * - AES-GCM: transport packets' AES-128-GCM on the VAES code where the CPU has VAES and
 *   VPCLMULQDQ (aead_vaes.c); otherwise, and for the handshake's AES-256-GCM, GnuTLS where the
 *   build has it (aead_gnutls.c), else OpenSSL.
 *
 * CMake decides which libraries a build has (PURE_HAVE_GNUTLS, PURE_HAVE_NETTLE); the CPU check
 * runs in aead_init only. The chosen implementation's init stores itself in the context's ops,
 * so seal, open and free go straight to it: no feature test on the per-packet path. */
#include <errno.h>
#include <sys/random.h>

#include "aead_vaes.h"
#include "crypto_openssl.h"
#include "pure.h"
#ifdef PURE_HAVE_GNUTLS
#include "aead_gnutls.h"
#endif
#ifdef PURE_HAVE_NETTLE
#include "prims_nettle.h"
#endif

/* The kernel's CSPRNG (getrandom(2)), what the default backend draws keys and nonces from.
 * OpenSSL's RAND_bytes reaches the same source through its DRBG, whose first use instantiates
 * the DRBG chain and reads OpenSSL's configuration: 7.9 million instructions, 37% of what a
 * `pure drain` client spent before its first packet (callgrind). */
static int os_random(uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = getrandom(buf, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return PURE_ECRYPTO;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The AES-GCM that serves an algorithm where the CPU lacks VAES, or for AES-256-GCM. */
#ifdef PURE_HAVE_GNUTLS
static const pure_aead_impl *const library_aead = &pure_aead_gnutls;
#else
static const pure_aead_impl *const library_aead = &pure_aead_openssl;
#endif

/* Schedules key on the fastest implementation for alg; that implementation's init sets a->ops,
 * which every later call on this context follows. */
static int default_aead_init(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key)
{
    if (alg == PURE_AEAD_AES128_GCM && pure_vaes_available())
        return pure_aead_vaes.init(a, alg, key);
    return library_aead->init(a, alg, key);
}

/* A context never initialised has no ops (the callers' zeroed memory) and nothing to free. */
static void default_aead_free(pure_aead *a)
{
    if (a != NULL && a->ops != NULL)
        a->ops->free(a);
}

static int default_aead_seal(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                             size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN])
{
    if (a == NULL || a->ops == NULL)
        return PURE_EINVAL;
    return a->ops->seal(a, nonce, ad, adlen, data, len, tag);
}

/* Out of place where the key's implementation can (VAES); the others take the runs copied in. */
static int default_aead_seal_from(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN],
                                  const uint8_t *ad, size_t adlen, uint8_t *data, size_t len,
                                  const pure_aead_src *runs, size_t nruns,
                                  uint8_t tag[PURE_TAG_LEN])
{
    if (a == NULL || a->ops == NULL)
        return PURE_EINVAL;
    if (a->ops->seal_from)
        return a->ops->seal_from(a, nonce, ad, adlen, data, len, runs, nruns, tag);
    return pure_aead_seal_copying(a->ops->seal, a, nonce, ad, adlen, data, len, runs, nruns, tag);
}

static int default_aead_open(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                             size_t adlen, uint8_t *data, size_t len,
                             const uint8_t tag[PURE_TAG_LEN])
{
    if (a == NULL || a->ops == NULL)
        return PURE_EINVAL;
    return a->ops->open(a, nonce, ad, adlen, data, len, tag);
}

const pure_crypto pure_crypto_default = {
    .name = "default",
    .random = os_random,
#ifdef PURE_HAVE_NETTLE
    .dh_public = pure_nettle_dh_public,
    .hash = pure_nettle_hash,
    .hmac = pure_nettle_hmac,
#else
    .dh_public = pure_openssl_dh_public,
    .hash = pure_openssl_hash,
    .hmac = pure_openssl_hmac,
#endif
    .dh = pure_openssl_dh,
    .aead_init = default_aead_init,
    .aead_free = default_aead_free,
    .aead_seal = default_aead_seal,
    .aead_open = default_aead_open,
    .aead_seal_from = default_aead_seal_from,
};
