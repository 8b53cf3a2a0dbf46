/* SPDX-License-Identifier: MIT */
/* prims_nettle.h: X25519 public keys, SHA-256 and HMAC-SHA256 through Nettle for the default
 * backend (why: prims_nettle.c). Same contracts as the seam's dh_public, hash and hmac in crypto.h.
 */
#ifndef PURE_PRIMS_NETTLE_H
#define PURE_PRIMS_NETTLE_H

#include "crypto.h"

int pure_nettle_dh_public(uint8_t pub[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN]);
void pure_nettle_hash(uint8_t out[PURE_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
                      size_t blen, const uint8_t *c, size_t clen);
void pure_nettle_hmac(uint8_t out[PURE_HASH_LEN], const uint8_t *key, size_t keylen,
                      const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

#endif
