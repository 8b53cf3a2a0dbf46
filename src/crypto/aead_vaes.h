/* SPDX-License-Identifier: MIT */
/* aead_vaes.h: AES-128-GCM on VAES + VPCLMULQDQ (AVX-512), the transport AEAD of the default
 * backend where the CPU has them (why and how: aead_vaes.c). Same contracts as the seam's aead_*
 * functions in crypto.h, for PURE_AEAD_AES128_GCM only; init says PURE_EINVAL for another
 * algorithm or when pure_vaes_available() is 0. */
#ifndef PURE_AEAD_VAES_H
#define PURE_AEAD_VAES_H

#include "crypto.h"

/* 1 if this CPU (and OS) run the VAES code: AVX-512F/BW/VL, VAES, VPCLMULQDQ, AES-NI, PCLMUL. */
int pure_vaes_available(void);
int pure_vaes_aead_init(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key);
void pure_vaes_aead_free(pure_aead *a);
int pure_vaes_aead_seal(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                        size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN]);
int pure_vaes_aead_seal_from(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                             size_t adlen, uint8_t *data, size_t len, const pure_aead_src *runs,
                             size_t nruns, uint8_t tag[PURE_TAG_LEN]);
int pure_vaes_aead_open(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                        size_t adlen, uint8_t *data, size_t len, const uint8_t tag[PURE_TAG_LEN]);

/* The functions above as one AEAD implementation (what crypto_default.c picks). */
extern const pure_aead_impl pure_aead_vaes;

#endif
