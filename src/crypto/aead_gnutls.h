/* SPDX-License-Identifier: MIT */
/* aead_gnutls.h: AES-GCM through GnuTLS, the AEAD of the default crypto backend (why: see
 * aead_gnutls.c). Same contracts as the seam's aead_* functions in crypto.h. */
#ifndef PURE_AEAD_GNUTLS_H
#define PURE_AEAD_GNUTLS_H

#include "crypto.h"

int pure_gnutls_aead_init(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key);
void pure_gnutls_aead_free(pure_aead *a);
int pure_gnutls_aead_seal(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                          size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN]);
int pure_gnutls_aead_open(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                          size_t adlen, uint8_t *data, size_t len, const uint8_t tag[PURE_TAG_LEN]);

/* The four functions above as one AEAD implementation (what crypto_default.c picks). */
extern const pure_aead_impl pure_aead_gnutls;

#endif
