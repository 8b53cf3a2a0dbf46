/* SPDX-License-Identifier: MIT */
/* prims_nettle.c: X25519 public keys, SHA-256 and HMAC-SHA256 through Nettle, for the default
 * backend (pure_crypto_default) when the build has Nettle (it comes with GnuTLS).
 *
 * Why: Nettle's functions are plain calls on caller memory, without OpenSSL 3.0's EVP objects
 * and provider dispatch around every call; the base-point multiply (a public key) measured
 * 25-33 us against OpenSSL's 30-44. Not used for key agreement: X25519 with a peer's point costs
 * 53-74 us in Nettle 3.8 against OpenSSL's 38-50, four per handshake per side (with Nettle's a
 * handshakes run measured ~920 us per handshake, both sides, against ~730-870 with OpenSSL's).
 * Nettle throughout would spare a process OpenSSL's one-time initialisation (~7 million
 * instructions before a client's first packet), less than the difference of a few handshakes.
 * pure_crypto_openssl keeps OpenSSL for everything. */
#include "prims_nettle.h"

#include <string.h>

#include <nettle/curve25519.h>
#include <nettle/hmac.h>
#include <nettle/sha2.h>

#include "pure.h"

int pure_nettle_dh_public(uint8_t pub[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN])
{
    if (pub == NULL || priv == NULL)
        return PURE_EINVAL;
    curve25519_mul_g(pub, priv); /* clamps the scalar itself, as RFC 7748 says */
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
