/* SPDX-License-Identifier: MIT */
/* crypto_openssl.h: the parts of the OpenSSL backend (crypto_openssl.c) that the default backend
 * (crypto_default.c) borrows: X25519, SHA-256, HMAC and its AES-GCM as one AEAD implementation.
 * Same contracts as the seam's functions of the same names in crypto.h. */
#ifndef PURE_CRYPTO_OPENSSL_H
#define PURE_CRYPTO_OPENSSL_H

#include "crypto.h"

/* X25519 public key of a private key: 0, or PURE_ECRYPTO. */
int pure_openssl_dh_public(uint8_t pub[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN]);
/* X25519 shared secret: 0, or PURE_ECRYPTO (also for an all-zero result; out is then zero). */
int pure_openssl_dh(uint8_t out[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN],
                    const uint8_t pub[PURE_DH_LEN]);
/* SHA-256 over up to three pieces (a NULL piece is skipped); fails closed (crypto_openssl.c). */
void pure_openssl_hash(uint8_t out[PURE_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
                       size_t blen, const uint8_t *c, size_t clen);
/* HMAC-SHA256(key, a || b); fails closed (crypto_openssl.c). */
void pure_openssl_hmac(uint8_t out[PURE_HASH_LEN], const uint8_t *key, size_t keylen,
                       const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* AES-128-GCM and AES-256-GCM through OpenSSL 3.0 (the provider called directly, or EVP). */
extern const pure_aead_impl pure_aead_openssl;

#endif
