/* SPDX-License-Identifier: MIT */
/* crypto_common.c: backend-independent helpers of the crypto seam (Noise's HKDF, sealing
 * from runs where a backend cannot, wiping). */
#include "crypto.h"

#include <string.h>

#include "pure.h"

/* Noise section 4.3: temp = HMAC(ck, ikm); out1 = HMAC(temp, 0x01);
 * out2 = HMAC(temp, out1 || 0x02). Only HMAC is needed, so this works on any backend. */
void pure_hkdf2(const pure_crypto *c, uint8_t out1[PURE_HASH_LEN], uint8_t out2[PURE_HASH_LEN],
                const uint8_t ck[PURE_HASH_LEN], const uint8_t *ikm, size_t ikmlen)
{
    static const uint8_t one = 0x01, two = 0x02;
    uint8_t temp[PURE_HASH_LEN], o1[PURE_HASH_LEN];
    c->hmac(temp, ck, PURE_HASH_LEN, ikm, ikmlen, NULL, 0);
    c->hmac(o1, temp, sizeof(temp), &one, 1, NULL, 0);
    if (out2 != NULL)
        c->hmac(out2, temp, sizeof(temp), o1, sizeof(o1), &two, 1);
    /* out1 may alias ck (MixKey updates ck in place), so it is written last. */
    memcpy(out1, o1, sizeof(o1));
    pure_wipe(temp, sizeof(temp));
    pure_wipe(o1, sizeof(o1));
}

int pure_aead_runs_valid(size_t len, const pure_aead_src *runs, size_t nruns)
{
    size_t pos = 0;
    for (size_t i = 0; i < nruns; i++) {
        if (runs[i].at < pos || runs[i].at > len || runs[i].len > len - runs[i].at ||
            (runs[i].src == NULL && runs[i].len))
            return 0;
        pos = runs[i].at + runs[i].len;
    }
    return 1;
}

int pure_aead_seal_copying(pure_aead_seal_fn seal, pure_aead *a,
                           const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad, size_t adlen,
                           uint8_t *data, size_t len, const pure_aead_src *runs, size_t nruns,
                           uint8_t tag[PURE_TAG_LEN])
{
    if ((data == NULL && len) || (runs == NULL && nruns) || !pure_aead_runs_valid(len, runs, nruns))
        return PURE_EINVAL;
    for (size_t i = 0; i < nruns; i++)
        if (runs[i].len)
            memcpy(data + runs[i].at, runs[i].src, runs[i].len);
    return seal(a, nonce, ad, adlen, data, len, tag);
}

int pure_aead_seal_from(const pure_crypto *c, pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN],
                        const uint8_t *ad, size_t adlen, uint8_t *data, size_t len,
                        const pure_aead_src *runs, size_t nruns, uint8_t tag[PURE_TAG_LEN])
{
    if (c->aead_seal_from)
        return c->aead_seal_from(a, nonce, ad, adlen, data, len, runs, nruns, tag);
    return pure_aead_seal_copying(c->aead_seal, a, nonce, ad, adlen, data, len, runs, nruns, tag);
}

void pure_wipe(void *p, size_t n)
{
    if (p == NULL || n == 0)
        return;
#if defined(__GNUC__)
    /* memset at full speed (a forged packet's buffer is wiped on the failure path), then an empty
     * asm that the compiler must assume reads the memory at p: the stores cannot be dropped as
     * dead stores to memory about to be freed or go out of scope (as BoringSSL's
     * OPENSSL_cleanse and glibc's explicit_bzero do it). */
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
#else
    /* A store through a volatile pointer must happen. */
    volatile unsigned char *v = p;
    while (n-- > 0)
        *v++ = 0;
#endif
}
