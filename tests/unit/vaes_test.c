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

/* Sealing from runs (crypto.h's aead_seal_from: a packet's stream bytes read from the send ring,
 * not copied into the packet first) gives the bytes and tag of sealing the same plaintext in
 * place: runs starting at every offset within a block, crossing the 64- and 256-byte steps, one to
 * four of them, empty ones, and a run covering the whole packet; what the packet held under a run
 * before is never read (it holds 0xA5 there). Runs out of order, overlapping or past the end are
 * refused. */
static void test_vaes_seal_from_runs(void)
{
    static uint8_t msg[3000], want[3000], got[3000], src[3000];
    uint64_t r = 0x243f6a8885a308d3ull;
    int mismatches = 0;
    uint8_t key[16] = {7, 1, 8}, nonce[12] = {9}, ad[13] = {4, 2};
    pure_aead x;
    CHECK_EQ(pure_vaes_aead_init(&x, PURE_AEAD_AES128_GCM, key), 0);
    for (int it = 0; it < 4000; it++) {
        size_t len = it < 600 ? (size_t)it : (size_t)((r >> 21) % sizeof msg);
        for (size_t i = 0; i < len; i++)
            msg[i] = (uint8_t)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 56);
        pure_aead_src runs[4];
        size_t nruns = 0, pos = 0;
        int want_runs = (int)((r >> 30) % 5);
        for (int j = 0; j < want_runs && pos <= len; j++) {
            r = r * 6364136223846793005ull + 11;
            size_t gap = len - pos ? (size_t)(r >> 40) % (len - pos + 1) : 0;
            if ((r >> 20) % 3 == 0)
                gap = 0; /* runs back to back, as a ring's two pieces are */
            size_t at = pos + gap, n = len - at ? (size_t)(r >> 12) % (len - at + 1) : 0;
            runs[nruns++] = (pure_aead_src){src + at, at, n};
            pos = at + n;
        }
        if (it % 97 == 5 && len) /* one run over the whole packet */
            nruns = 1, runs[0] = (pure_aead_src){src, 0, len};
        memcpy(want, msg, len);
        memcpy(got, msg, len);
        for (size_t j = 0; j < nruns; j++) {
            memcpy(src + runs[j].at, msg + runs[j].at, runs[j].len);
            memset(got + runs[j].at, 0xA5, runs[j].len);
        }
        uint8_t t1[16], t2[16];
        CHECK_EQ(pure_vaes_aead_seal(&x, nonce, ad, sizeof ad, len ? want : NULL, len, t1), 0);
        CHECK_EQ(pure_vaes_aead_seal_from(&x, nonce, ad, sizeof ad, len ? got : NULL, len, runs,
                                          nruns, t2),
                 0);
        if (memcmp(want, got, len) != 0 || memcmp(t1, t2, 16) != 0)
            mismatches++;
        nonce[it % 12]++;
    }
    CHECK_EQ(mismatches, 0);
    uint8_t tag[16];
    pure_aead_src overlap[2] = {{src, 4, 10}, {src, 10, 4}}, past[1] = {{src, 30, 10}},
                  order[2] = {{src, 20, 1}, {src, 4, 1}}, nosrc[1] = {{NULL, 0, 3}};
    CHECK_EQ(pure_vaes_aead_seal_from(&x, nonce, NULL, 0, got, 32, overlap, 2, tag), PURE_EINVAL);
    CHECK_EQ(pure_vaes_aead_seal_from(&x, nonce, NULL, 0, got, 32, past, 1, tag), PURE_EINVAL);
    CHECK_EQ(pure_vaes_aead_seal_from(&x, nonce, NULL, 0, got, 32, order, 2, tag), PURE_EINVAL);
    CHECK_EQ(pure_vaes_aead_seal_from(&x, nonce, NULL, 0, got, 32, nosrc, 1, tag), PURE_EINVAL);
    CHECK_EQ(pure_vaes_aead_seal_from(&x, nonce, NULL, 0, got, 32, NULL, 1, tag), PURE_EINVAL);
    pure_vaes_aead_free(&x);
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
    RUN(test_vaes_seal_from_runs);
    return pure_test_finish();
}
