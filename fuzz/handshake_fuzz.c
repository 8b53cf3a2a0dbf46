/* SPDX-License-Identifier: MIT */
/* handshake_fuzz.c: libFuzzer target for the Noise IK message readers (noise.c) on the null
 * crypto backend.
 *
 * byte 0 picks a mode:
 *   0  responder: pure_noise_read_msg1 over the rest (byte 1 sets the payload capacity);
 *   1  initiator: writes msg1, then pure_noise_read_msg2 over the rest (byte 1: capacity);
 *   2  a whole handshake with fuzzer-chosen payloads, where the fuzzer may flip one byte of each
 *      message or cut its end: a changed message must be refused without changing the reader's
 *      state, after which the genuine message must still be accepted; the payloads must come out
 *      as they went in, the responder must learn the initiator's static key, and both sides must
 *      split into matching transport keys.
 * Every reader's return code must be one its contract lists, and a failed read must leave the
 * handshake state byte-identical. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "noise.h"
#include "pure.h"
#include "wire.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "handshake_fuzz: %s (line %d)\n", what, __LINE__);                         \
        abort();                                                                                   \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t k_init_priv[32] = {
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01,
    0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x42};
static const uint8_t k_resp_priv[32] = {
    0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
    0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0x7f};

static const pure_crypto *C = &pure_crypto_null;

static void init_resp(pure_noise *r)
{
    if (pure_noise_init(r, C, 0, (const uint8_t *)PURE_PROLOGUE, strlen(PURE_PROLOGUE), k_resp_priv,
                        NULL) != 0)
        FAIL("responder init");
}

static void init_init(pure_noise *i)
{
    uint8_t rs[32];
    if (C->dh_public(rs, k_resp_priv) != 0)
        FAIL("dh_public");
    if (pure_noise_init(i, C, 1, (const uint8_t *)PURE_PROLOGUE, strlen(PURE_PROLOGUE), k_init_priv,
                        rs) != 0)
        FAIL("initiator init");
}

/* A read that failed must have returned a listed code and left the state as it was. */
static void check_failed_read(int rc, const pure_noise *before, const pure_noise *after)
{
    if (rc != PURE_EPROTO && rc != PURE_ENOBUFS && rc != PURE_ECRYPTO)
        FAIL("read returned a code its contract does not list");
    if (memcmp(before, after, sizeof *before) != 0)
        FAIL("failed read changed the handshake state");
}

static int read1(pure_noise *r, const uint8_t *m, size_t len, uint8_t *pl, size_t cap, size_t *plen)
{
    pure_noise before = *r;
    int rc = pure_noise_read_msg1(r, m, len, pl, cap, plen);
    if (rc != 0) {
        check_failed_read(rc, &before, r);
    } else {
        if (len < PURE_NOISE_MSG1_OVERHEAD || *plen != len - PURE_NOISE_MSG1_OVERHEAD ||
            *plen > cap || r->state != PURE_NOISE_RESP_GOT_MSG1)
            FAIL("accepted msg1 with inconsistent results");
    }
    return rc;
}

static int read2(pure_noise *i, const uint8_t *m, size_t len, uint8_t *pl, size_t cap, size_t *plen)
{
    pure_noise before = *i;
    int rc = pure_noise_read_msg2(i, m, len, pl, cap, plen);
    if (rc != 0) {
        check_failed_read(rc, &before, i);
    } else {
        if (len < PURE_NOISE_MSG2_OVERHEAD || *plen != len - PURE_NOISE_MSG2_OVERHEAD ||
            *plen > cap || i->state != PURE_NOISE_DONE)
            FAIL("accepted msg2 with inconsistent results");
    }
    return rc;
}

/* Applies the fuzzer's tamper (xor one byte, or cut `cut` bytes off the end) to a copy. Returns
 * the tampered length, or SIZE_MAX when the tamper is a no-op. */
static size_t tamper(uint8_t *dst, const uint8_t *msg, size_t len, const uint8_t t[4])
{
    memcpy(dst, msg, len);
    size_t pos = (size_t)(t[0] << 8 | t[1]) % len;
    if (t[2]) {
        dst[pos] ^= t[2];
        return len;
    }
    size_t cut = t[3] % (len + 1);
    return cut ? len - cut : SIZE_MAX;
}

static void whole_handshake(const uint8_t *d, size_t n)
{
    if (n < 10)
        return;
    const uint8_t *t1 = d, *t2 = d + 4; /* tampers of msg1, msg2 */
    size_t p1len = d[8] % 64;           /* the INIT payload is small in Pure */
    size_t cap_slack = d[9] % 4;        /* 0: exact capacity; else spare bytes */
    d += 10;
    n -= 10;
    if (p1len > n)
        p1len = n;
    const uint8_t *p1 = d, *p2 = d + p1len;
    size_t p2len = n - p1len;
    if (p2len > 512)
        p2len = 512;

    pure_noise i, r;
    init_init(&i);
    init_resp(&r);
    uint8_t m1[64 + PURE_NOISE_MSG1_OVERHEAD], bad[1024], pl[1024];
    size_t m1len = 0, plen = 0;
    if (pure_noise_write_msg1(&i, p1, p1len, m1, sizeof m1, &m1len) != 0)
        FAIL("write msg1");
    if (m1len != p1len + PURE_NOISE_MSG1_OVERHEAD)
        FAIL("msg1 length");
    size_t blen = tamper(bad, m1, m1len, t1);
    if (blen != SIZE_MAX && read1(&r, bad, blen, pl, sizeof pl, &plen) == 0)
        FAIL("tampered msg1 accepted");
    if (read1(&r, m1, m1len, pl, p1len + cap_slack, &plen) != 0)
        FAIL("genuine msg1 refused");
    if (plen != p1len || memcmp(pl, p1, p1len) != 0)
        FAIL("msg1 payload changed");
    uint8_t s_pub[32];
    C->dh_public(s_pub, k_init_priv);
    if (memcmp(r.rs, s_pub, 32) != 0)
        FAIL("responder learnt the wrong static key");
    /* the same message cannot be read twice */
    if (pure_noise_read_msg1(&r, m1, m1len, pl, sizeof pl, &plen) != PURE_EINVAL)
        FAIL("msg1 read twice");

    uint8_t m2[512 + PURE_NOISE_MSG2_OVERHEAD];
    size_t m2len = 0;
    if (pure_noise_write_msg2(&r, p2, p2len, m2, sizeof m2, &m2len) != 0)
        FAIL("write msg2");
    if (m2len != p2len + PURE_NOISE_MSG2_OVERHEAD)
        FAIL("msg2 length");
    blen = tamper(bad, m2, m2len, t2);
    if (blen != SIZE_MAX && read2(&i, bad, blen, pl, sizeof pl, &plen) == 0)
        FAIL("tampered msg2 accepted");
    if (read2(&i, m2, m2len, pl, p2len + cap_slack, &plen) != 0)
        FAIL("genuine msg2 refused");
    if (plen != p2len || memcmp(pl, p2, p2len) != 0)
        FAIL("msg2 payload changed");

    uint8_t is[32], ir[32], ick[32], ih[32], rsd[32], rr[32], rck[32], rh[32];
    if (pure_noise_split(&i, is, ir, ick, ih) != 0 || pure_noise_split(&r, rsd, rr, rck, rh) != 0)
        FAIL("split");
    if (memcmp(is, rr, 32) != 0 || memcmp(ir, rsd, 32) != 0 || memcmp(ick, rck, 32) != 0 ||
        memcmp(ih, rh, 32) != 0 || memcmp(is, ir, 32) == 0)
        FAIL("the two sides split into different keys");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    pure_crypto_null_seed(0x5eed);
    int mode = data[0] % 3;
    size_t cap = (size_t)data[1] * 8;
    const uint8_t *msg = data + 2;
    size_t len = size - 2;
    static uint8_t pl[2048 + 64];
    size_t plen = 0;
    if (mode == 0) {
        pure_noise r;
        init_resp(&r);
        read1(&r, msg, len, pl, cap, &plen);
        pure_noise_wipe(&r);
    } else if (mode == 1) {
        pure_noise i;
        init_init(&i);
        uint8_t m1[128];
        size_t m1len;
        if (pure_noise_write_msg1(&i, (const uint8_t *)"\4pure", 5, m1, sizeof m1, &m1len) != 0)
            FAIL("write msg1");
        read2(&i, msg, len, pl, cap, &plen);
        pure_noise_wipe(&i);
    } else {
        whole_handshake(data + 1, size - 1);
    }
    return 0;
}
