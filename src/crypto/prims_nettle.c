/* prims_nettle.c: X25519, SHA-256 and HMAC-SHA256 through Nettle, for the default backend
 * (pure_crypto_default) when the build has Nettle (it comes with GnuTLS).
 *
 * Why: the first OpenSSL 3.0 call of a process initialises the library (configuration, default
 * provider, DRBG): ~7 million instructions and hundreds of page faults before a client's first
 * packet (callgrind of `pure drain ... 1 61`: EVP_PKEY_new_raw_private_key -> pthread_once,
 * 6.9 M of 21 M). Nettle's functions are plain calls on caller memory with no setup, the same
 * math. pure_crypto_openssl keeps OpenSSL for everything. */
#include "prims_nettle.h"

#include <string.h>

#include <nettle/curve25519.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "pure.h"

int pure_nettle_dh_public(uint8_t pub[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN])
{
    if (pub == NULL || priv == NULL)
        return PURE_EINVAL;
    curve25519_mul_g(pub, priv); /* clamps the scalar itself, as RFC 7748 says */
    return 0;
}

int pure_nettle_dh(uint8_t out[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN],
                   const uint8_t pub[PURE_DH_LEN])
{
    static const uint8_t zero[PURE_DH_LEN];
    if (out == NULL || priv == NULL || pub == NULL)
        return PURE_EINVAL;
    curve25519_mul(out, priv, pub);
    if (memeql_sec(out, zero, PURE_DH_LEN)) { /* a low-order peer point */
        pure_wipe(out, PURE_DH_LEN);
        return PURE_ECRYPTO;
    }
    return 0;
}

void pure_nettle_hash(uint8_t out[PURE_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
                      size_t blen, const uint8_t *c, size_t clen)
{
    struct sha256_ctx h;
    sha256_init(&h);
    if (a)
        sha256_update(&h, alen, a);
    if (b)
        sha256_update(&h, blen, b);
    if (c)
        sha256_update(&h, clen, c);
    sha256_digest(&h, PURE_HASH_LEN, out);
    pure_wipe(&h, sizeof h);
}

void pure_nettle_hmac(uint8_t out[PURE_HASH_LEN], const uint8_t *key, size_t keylen,
                      const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    struct hmac_sha256_ctx h;
    hmac_sha256_set_key(&h, keylen, key); /* keys over 64 bytes are hashed first (RFC 2104) */
    if (a)
        hmac_sha256_update(&h, alen, a);
    if (b)
        hmac_sha256_update(&h, blen, b);
    hmac_sha256_digest(&h, PURE_HASH_LEN, out);
    pure_wipe(&h, sizeof h);
}
