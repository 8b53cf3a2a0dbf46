/* SPDX-License-Identifier: MIT */
/* vaes_test.c: the AES-128-GCM code for CPUs with VAES/VPCLMULQDQ/AVX-512 (src/crypto/aead_vaes.c)
 * against OpenSSL's. A test of its own so that a CPU without these instructions shows it as
 * skipped (exit PURE_TEST_SKIP: ctest's "Not Run (Skipped)") rather than passed, while
 * crypto_test still runs every other crypto check there. */
#include <stdio.h>
#include <string.h>

#include "aead_vaes.h"
#include "crypto.h"
#include "crypto_openssl.h"
#include "pure.h"
#include "test.h"

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* The VAES code against OpenSSL's AES-128-GCM on random keys, nonces, ad of 0..80 bytes and
 * data of every length 0..1600 (each partial block and register tail, in and out of the
 * sixteen-block loop) plus larger sizes; each result opens, and a flipped ciphertext bit is
 * refused with the data zeroed. */
static void test_vaes_against_openssl(void)
{
    static uint8_t msg[40000], a[40000], b[40000];
    uint64_t r = 0x9e3779b97f4a7c15ull;
    int mismatches = 0, opened_wrong = 0, forged = 0;
    for (int it = 0; it < 1800; it++) {
        uint8_t key[16], nonce[12], ad[80], t1[16], t2[16];
        for (size_t i = 0; i < sizeof key; i++)
            key[i] = (uint8_t)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 56);
        for (size_t i = 0; i < sizeof nonce; i++)
            nonce[i] = (uint8_t)((r = r * 6364136223846793005ull + 1) >> 56);
        size_t adlen = (size_t)(r >> 33) % 81;
        size_t len = it <= 1600 ? (size_t)it : (size_t)((r >> 20) % sizeof msg);
        for (size_t i = 0; i < adlen; i++)
            ad[i] = (uint8_t)(i * 7 + it);
        for (size_t i = 0; i < len; i++)
            msg[i] = (uint8_t)((r = r * 6364136223846793005ull + 3) >> 59 ^ i);
        pure_aead ref, x;
        CHECK_EQ(pure_crypto_openssl.aead_init(&ref, PURE_AEAD_AES128_GCM, key), 0);
        CHECK_EQ(pure_vaes_aead_init(&x, PURE_AEAD_AES128_GCM, key), 0);
        memcpy(a, msg, len);
        memcpy(b, msg, len);
        CHECK_EQ(pure_crypto_openssl.aead_seal(&ref, nonce, ad, adlen, a, len, t1), 0);
        CHECK_EQ(pure_vaes_aead_seal(&x, nonce, adlen ? ad : NULL, adlen, len ? b : NULL, len, t2),
                 0);
        if (memcmp(a, b, len) != 0 || memcmp(t1, t2, 16) != 0)
            mismatches++;
        if (len) {
            b[(size_t)(r >> 40) % len] ^= (uint8_t)(1u << (it % 8));
            memcpy(a, b, len);
            if (pure_vaes_aead_open(&x, nonce, ad, adlen, b, len, t2) != PURE_ECRYPTO ||
                !all_zero(b, len))
                forged++;
            memcpy(b, a, len); /* the refused open zeroed it */
            b[(size_t)(r >> 40) % len] ^= (uint8_t)(1u << (it % 8));
        }
        if (pure_vaes_aead_open(&x, nonce, adlen ? ad : NULL, adlen, len ? b : NULL, len, t2) !=
                0 ||
            memcmp(b, msg, len) != 0)
            opened_wrong++;
        pure_crypto_openssl.aead_free(&ref);
        pure_vaes_aead_free(&x);
        CHECK(x.impl == NULL);
    }
    CHECK_EQ(mismatches, 0);
    CHECK_EQ(forged, 0);
    CHECK_EQ(opened_wrong, 0);
    /* only AES-128-GCM: the handshake's AES-256 goes elsewhere */
    pure_aead x;
    uint8_t key[32] = {1};
    CHECK_EQ(pure_vaes_aead_init(&x, PURE_AEAD_AES256_GCM, key), PURE_EINVAL);
}

int main(void)
{
    if (!pure_vaes_available()) {
        printf("SKIP: this CPU lacks VAES/VPCLMULQDQ/AVX-512 (or the OS does not save AVX-512 "
               "state): the VAES code is not tested here, and Pure uses GnuTLS or OpenSSL for "
               "AES-GCM on it\n");
        return PURE_TEST_SKIP;
    }
    RUN(test_vaes_against_openssl);
    return pure_test_finish();
}
